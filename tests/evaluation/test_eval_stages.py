"""The ``mask_eval`` and ``checks`` stages on real upstream artifacts (tiny backbone, V2 data, EG/zero).

Upstream artifacts are made in-process with the other packages' public functions, at their contract
paths; the stage bodies then run on them. One D value is recomputed independently via ``classify_ids``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from bench_scripts import load_bench_script
from safetensors.torch import load_file

from xurs_pipeline.attribution.runner import RunOutput, run_attribution
from xurs_pipeline.config import (
    ConfigError,
    RootConfig,
    attribution_fingerprint,
    repeat_config,
    train_run_hash,
    validate,
)
from xurs_pipeline.credal import credal_width
from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset
from xurs_pipeline.evaluation.artifacts import read_attributions
from xurs_pipeline.io import ArtifactError, read_parquet
from xurs_pipeline.models.backbone import TinySpec, load_backbone_dir, materialize_backbone
from xurs_pipeline.models.checkpoint import build_classifier, load_classifier, save_classifier
from xurs_pipeline.models.config import ModelConfig
from xurs_pipeline.reporting.tables import effects_frame, numerics_frame, targets_frame
from xurs_pipeline.tasks import attribute as attribute_stage
from xurs_pipeline.tasks import attribute_repeats as repeats_stage
from xurs_pipeline.tasks import attribute_targets as targets_stage
from xurs_pipeline.tasks import checks as checks_stage
from xurs_pipeline.tasks import mask_eval as mask_stage
from xurs_pipeline.tasks.runner import run_task


def make_cfg(artifacts: Path, **evaluation: object) -> RootConfig:
    return validate(
        {
            "paths": {"artifacts": str(artifacts)},
            "data": {"source": "synthetic_v2", "families": [1, 1, 1], "cases_per_family": 1},
            "model": {"backbone": "tiny", "tiny_hidden_size": 32, "tiny_layers": 2},
            "attribution": {
                "method": "eg",
                "reference": "zero",
                "n_collections": 1,
                "refs_per_collection": 1,
                "n_samples": 8,
                "samples_per_call": 8,
                "max_questions": 3,
                "split": "test",
                "progress": False,
            },
            "evaluation": {
                "bootstrap_resamples": 200,
                "top_k_max": 3,
                "randomisation_questions": 1,
                "randomisation_blocks": 1,
                "device": "cpu",
                "repeat_seeds": [],
                **evaluation,
            },
        }
    )


def attribute_saved(cfg: RootConfig, root: Path) -> None:
    """The attribute stage's run of ``cfg`` on the classifier and prompts saved under ``root``."""
    model, tokenizer = load_classifier(root / "train" / "classifier")
    prompts = read_parquet(root / "prepared" / "prompts.parquet")
    run_attribution(
        model,
        prompts,
        cfg.attribution,
        pad_id=tokenizer.pad_token_id,
        max_positions=1024,
        out=RunOutput(root / "attribute", attribution_fingerprint(cfg)),
    )


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("artifacts")
    cfg = make_cfg(root)
    materialize_backbone(root / "backbone", "tiny", tiny=TinySpec(512, 32, 2, 4, 0))
    backbone = load_backbone_dir(root / "backbone")
    prepare_dataset(cfg.data, backbone.tokenizer, root / "prepared", data_config_hash(cfg.data))
    classifier = build_classifier(
        backbone, ModelConfig(output_kind="mass15"), seed=1
    )  # softmax: non-zero widths
    save_classifier(classifier, root / "train" / "classifier", config_hash=train_run_hash(cfg))
    attribute_saved(cfg, root)
    return root


def test_mask_eval_stage_writes_per_question_table_and_metrics(artifacts: Path):
    mask_stage.run(make_cfg(artifacts))
    table = read_parquet(artifacts / "mask_eval" / "per_question.parquet")
    attributions = read_attributions(artifacts / "attribute")
    assert sorted(table["record_id"]) == sorted(attributions["record_id"])
    metrics = json.loads((artifacts / "mask_eval" / "metrics.json").read_text())
    width = metrics["targets"]["width"]
    assert width["questions"] == 3
    assert width["mean_advantage"] == pytest.approx(table["advantage"].mean())
    assert width["ci_low"] <= width["mean_advantage"] <= width["ci_high"]
    assert set(width["curve"]) == {"k1", "k2", "k3"}
    assert metrics["budget"]["grad_evals_per_question"] > 0
    # Table 1 says in which precision attribution and zero-masking ran (here both float32)
    budget = metrics["budget"]
    assert (budget["precision"], budget["masking_precision"]) == (["float32"], "float32")
    budget_text = effects_frame(metrics, "unit")["budget"].iloc[0]
    assert budget_text.startswith("eg (float32),")  # the attribution's estimator and precision
    assert budget_text.endswith("; zero-masking in float32")

    # independent recomputation of D_{i*} for the first row: zero the top token's embedding
    row = table.iloc[0]
    model, _ = load_classifier(artifacts / "train" / "classifier")
    prompts = read_parquet(artifacts / "prepared" / "prompts.parquet").set_index("record_id")
    ids = torch.tensor(list(prompts.loc[row["record_id"], "input_ids"]))[None]
    mask = torch.ones_like(ids)
    with torch.no_grad():
        x = model.embed(ids)
        masked = x.clone()
        masked[0, row["top_positions"][0]] = 0
        positions = torch.arange(ids.shape[1])[None].repeat(2, 1)
        w = credal_width(model(torch.cat([x, masked]), mask.repeat(2, 1), positions).masses)
    assert row["d_top"] == pytest.approx(abs(float(w[1, row["target"]] - w[0, row["target"]])), abs=1e-6)
    assert row["d_top"] > 0
    magnitude = np.asarray(attributions.set_index("record_id").loc[row["record_id"], "token_magnitude"])
    eligible = np.asarray(prompts.loc[row["record_id"], "eligible"], dtype=bool)
    assert row["top_positions"][0] == np.flatnonzero(eligible)[np.argmax(magnitude[eligible])]


def test_checks_stage_reports_verdicts_for_completeness_not_gates(artifacts: Path):
    checks_stage.run(make_cfg(artifacts))
    table = read_parquet(artifacts / "checks" / "checks.parquet")
    summary = json.loads((artifacts / "checks" / "checks.json").read_text())
    groups = set(table["group"])
    assert "completeness_eg_zero" in groups
    assert not any(g.startswith("gates") for g in groups)  # the gates stage's (test_eval_gates_stage.py)
    assert summary["n_checks"] == len(table)
    assert summary["n_passed"] == int(table["passed"].sum())
    assert table["passed"].dtype == bool
    loc = read_parquet(artifacts / "checks" / "details" / "localisation.parquet")
    assert set(loc["region"]) == {"all_text", "case_text"}
    assert ((loc["clue_share"] >= 0) & (loc["clue_share"] <= 1)).all()
    rnd = read_parquet(artifacts / "checks" / "details" / "randomisation.parquet")
    assert rnd["randomised"].tolist()[:1] == ["head"]
    assert "randomisation" in summary
    # the clue's nulls on the randomisation's question: trained, head re-initialised, input only; against a
    # zero baseline every position is live, so the base rate is the clue's share of the region's tokens
    nulls = summary["localisation_nulls"]
    assert set(nulls) == {"trained", "randomised_head", "input_only"}
    assert {m["case_text"]["questions"] for m in nulls.values()} == {1}
    table = read_parquet(artifacts / "checks" / "details" / "localisation_nulls.parquet")
    case = table[(table["region"] == "case_text") & (table["ranking"] == "trained")].iloc[0]
    prompts = read_parquet(artifacts / "prepared" / "prompts.parquet").set_index("record_id")
    prompt = prompts.loc[case["record_id"]]
    assert case["n_live"] == len(prompt["case_positions"])
    assert case["n_clue_live"] == len(prompt["clue_positions"])
    assert case["chance_rank_1"] == pytest.approx(case["n_clue_live"] / case["n_live"])
    assert nulls["trained"]["case_text"]["base_rate_rank_1"] == pytest.approx(case["chance_rank_1"])
    assert not table[table["ranking"] == "randomised_head"]["clue_share"].equals(
        table[table["ranking"] == "trained"]["clue_share"].reset_index(drop=True)
    )


def test_stages_fail_clearly_on_missing_or_mismatched_artifacts(artifacts: Path, tmp_path: Path):
    with pytest.raises(ArtifactError, match=r"prompts\.parquet: missing artifact"):
        mask_stage.run(make_cfg(tmp_path))
    with pytest.raises(ArtifactError, match=r"targets/entropy/attributions\.parquet: missing artifact"):
        mask_stage.run(make_cfg(artifacts, targets=["width", "entropy"]))  # not attributed yet
    with pytest.raises(ArtifactError, match=r"attribute_seed17/attributions\.parquet: missing artifact"):
        checks_stage.run(make_cfg(artifacts, comparison_runs=["attribute_seed17"]))


def test_comparing_a_run_with_itself_passes_every_agreement_check(artifacts: Path):
    checks_stage.run(make_cfg(artifacts, comparison_runs=["attribute"], randomisation_questions=0))
    table = read_parquet(artifacts / "checks" / "checks.parquet")
    same = table[table["group"].str.endswith("main_vs_attribute")]
    assert len(same) == 9  # 4 value checks (Table 7) + 5 ranking checks (Table 6)
    assert same["passed"].all(), same
    values = same.set_index("name")["value"]
    assert values["median_spearman"] == pytest.approx(1.0)
    assert values["median_cosine"] == pytest.approx(1.0)
    assert values["median_relative_distance"] == pytest.approx(0.0, abs=1e-12)


def test_repeated_runs_are_made_in_the_pipeline_and_fill_table2(artifacts: Path):
    """App. B.3 / Table 7: attribute_repeats reruns the main attribution with another seed; checks compares
    it with the main run, so Table 2's rank and vector columns are defined."""
    cfg = make_cfg(artifacts, repeat_seeds=[17], randomisation_questions=0)
    repeats_stage.run(cfg)
    repeat = read_attributions(artifacts / "repeats" / "seed17")
    main = read_attributions(artifacts / "attribute")
    assert set(repeat["seed"]) == {17}
    assert sorted(repeat["record_id"]) == sorted(main["record_id"])
    assert not (artifacts / "repeats" / "seed17" / "parts").exists()
    assert json.loads((artifacts / "repeats" / "index.json").read_text())["repeats"] == {
        "seed17": {"seed": 17, "n_samples": 8, "target_fn": "width"}
    }
    headline = checks_stage.run(cfg)
    table = read_parquet(artifacts / "checks" / "checks.parquet")
    assert {"values_main_vs_seed17", "ranking_main_vs_seed17"} <= set(table["group"])
    details = read_parquet(artifacts / "checks" / "details" / "compare_seed17.parquet")
    # App. B.4's vector figure against the rerun in `dvc metrics show`: the per-question comparison's median
    # cosine and relative distance, recomputed here, with the verdict the checks give the same numbers
    vector = table[table["group"] == "values_main_vs_seed17"].set_index("name")
    assert headline["cos_rerun"] == pytest.approx(details["cosine"].median())
    assert headline["dist_rerun"] == pytest.approx(details["relative_distance"].median())
    assert bool(vector.loc["median_cosine", "passed"]) == (headline["cos_rerun"] >= 0.99)
    assert bool(vector.loc["median_relative_distance", "passed"]) == (headline["dist_rerun"] <= 0.10)
    row = numerics_frame(main, details).iloc[0]
    assert np.isfinite(row["spearman"])
    assert np.isfinite(row["relative_distance"])
    assert row["relative_distance"] > 0  # another seed: not the same vectors
    with pytest.raises(ConfigError, match=r"evaluation\.repeat_seeds contains attribution\.seed"):
        repeats_stage.run(make_cfg(artifacts, repeat_seeds=[cfg.attribution.seed]))  # refused, naming keys


def test_an_ig_repeat_doubles_the_quadrature_points_instead_of_repeating_the_main_run():
    """IG draws nothing at random: a repeat with another seed alone would equal the main run, a check that
    cannot fail. Its repeat starts from twice the points (or evaluation.repeat_n_samples points)."""
    cfg = make_cfg(Path("unused"), repeat_seeds=[17])
    ig = dataclasses.replace(cfg, attribution=dataclasses.replace(cfg.attribution, method="ig", ig_points=8))
    repeat = repeat_config(ig, 17).attribution
    assert (repeat.seed, repeat.ig_points, repeat.ig_max_points) == (17, 16, ig.attribution.ig_max_points)
    chosen = dataclasses.replace(ig, evaluation=dataclasses.replace(ig.evaluation, repeat_n_samples=4096))
    assert repeat_config(chosen, 17).attribution.ig_max_points == 4096  # raised to the start
    same = dataclasses.replace(ig, evaluation=dataclasses.replace(ig.evaluation, repeat_n_samples=8))
    with pytest.raises(ValueError, match=r"repeat_n_samples=8 equals attribution\.ig_points"):
        repeat_config(same, 17)
    assert repeat_config(cfg, 17).attribution.n_samples == cfg.attribution.n_samples  # EG


def test_a_kronrod_repeat_starts_from_three_times_the_intervals_instead_of_repeating_the_main_run():
    """kronrod is deterministic like IG: a repeat that changed only the seed would equal the main run."""
    cfg = make_cfg(Path("unused"), repeat_seeds=[17])
    at = dataclasses.replace(cfg.attribution, method="kronrod", kronrod_intervals=1)
    main = dataclasses.replace(at, kronrod_max_evals=15 * at.refs_per_collection)  # exactly the first pass
    repeat = repeat_config(dataclasses.replace(cfg, attribution=main), 17).attribution
    assert (repeat.seed, repeat.kronrod_intervals) == (17, 3)
    assert repeat.kronrod_max_evals == 45 * at.refs_per_collection  # raised to the repeat's first pass
    assert repeat != dataclasses.replace(main, seed=17)


def test_comparison_targets_are_attributed_zero_masked_and_compared(artifacts: Path):
    """Issue 17 item 6: entropy and BetP are attributed with the main run's engine and budget, zero-masked
    like the width, and compared with it (mean advantage, CI, rank agreement of token orders)."""
    cfg = make_cfg(artifacts, targets=["width", "entropy", "betp"])
    targets_stage.run(cfg)
    main = read_attributions(artifacts / "attribute")
    runs = {fn: read_attributions(artifacts / "targets" / fn) for fn in ("entropy", "betp")}
    for fn, run in runs.items():
        assert set(run["target_fn"]) == {fn}
        ours, theirs = (r.set_index(["record_id", "target"])["grad_evals"].sort_index() for r in (run, main))
        pd.testing.assert_series_equal(ours, theirs)  # the same questions and options, the same budget
    # BetP at the input is the row's betp entry of the explained answer: the engine explained BetP
    betp = runs["betp"].iloc[0]
    assert betp["width_input"] == pytest.approx(betp["betp"][betp["target"]], abs=1e-6)
    mask_stage.run(cfg)
    metrics = json.loads((artifacts / "mask_eval" / "metrics.json").read_text())
    assert set(metrics["targets"]) == {"width", "entropy", "betp"}
    table = targets_frame(metrics, pd.concat([main, *runs.values()]), topk=3).set_index("target_fn")
    assert table.loc["width", "spearman_vs_width"] == pytest.approx(1.0)
    assert table.loc["width", "overlap_vs_width"] == pytest.approx(1.0)
    for fn in ("entropy", "betp"):
        assert table.loc[fn, "mean_advantage"] == pytest.approx(metrics["targets"][fn]["mean_advantage"])
        assert -1 <= table.loc[fn, "spearman_vs_width"] < 1  # a different function, a different order
    assert targets_frame(metrics, main, topk=3).empty  # one target function: nothing to compare


def test_reference_endpoints_are_a_diagnostic_not_failed_checks(artifacts: Path, tmp_path: Path):
    """Eq. 10 (Table 3): with aligned paired references the shift is reported per question, with which
    width difference the explanation concerns; it never enters the pass/fail checks or ``checks_failed``
    (the headline counts defects only). A threshold of 0 makes every non-zero shift a "prepared" case."""
    for part in ("backbone", "prepared", "train"):
        (tmp_path / part).symlink_to(artifacts / part, target_is_directory=True)
    cfg = make_cfg(tmp_path, reference_shift_warning=0.0, randomisation_questions=0)
    a = dataclasses.replace(cfg.attribution, reference="aligned", result_filter="without_result")
    cfg = dataclasses.replace(cfg, attribution=a)
    attribute_saved(cfg, tmp_path)
    headline = checks_stage.run(cfg)
    table = read_parquet(tmp_path / "checks" / "checks.parquet")
    endpoints = read_parquet(tmp_path / "checks" / "details" / "endpoints.parquet")
    summary = json.loads((tmp_path / "checks" / "checks.json").read_text())
    assert len(endpoints) > 0
    assert set(endpoints["concerns"]) <= {"natural", "prepared"}
    assert (endpoints["concerns"] == "prepared").tolist() == (endpoints["shift"] > 0).tolist()
    assert not table["group"].str.contains("endpoint").any()  # not a check
    assert headline == {"checks": len(table), "checks_failed": int((~table["passed"]).sum())}
    assert summary["endpoints"]["cases"] == len(endpoints)
    assert summary["endpoints"]["shift_max"] == pytest.approx(endpoints["shift"].max())
    assert summary["endpoints"]["concern_prepared"] == int((endpoints["concerns"] == "prepared").sum())


def _certified(artifacts: Path, root: Path, **attribution: object) -> RootConfig:
    """``make_cfg`` under ``root`` (the fixture's classifier and prompts copied there, so its own attribute
    folder stays the EG run the other tests read) with the ``certified`` estimator and ``attribution``."""
    for folder in ("backbone", "train", "prepared"):
        if not (root / folder).exists():
            shutil.copytree(artifacts / folder, root / folder)
    cfg = make_cfg(root)
    at = dataclasses.replace(cfg.attribution, method="certified", **attribution)
    return dataclasses.replace(cfg, attribution=at)


def _vectors(folder: Path) -> dict[tuple[str, int], np.ndarray]:
    """Each written row's coordinate vector e (L, d), read straight from its safetensors file."""
    table = read_parquet(folder / "attributions.parquet")
    return {
        (r.record_id, int(r.target)): load_file(folder / "coords" / r.coords_file)["e"].double().numpy()
        for r in table.itertuples()
    }


@pytest.fixture(scope="module")
def certified_rerun(artifacts: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[RootConfig, dict]:
    """The attribute stage run once with ``certified`` and its own rerun (attribution.certified_rerun), one
    question's four answers explained (two certified runs through the stage: 12-20 s on the loaded 2-core
    machine): its config (``paths.artifacts`` is the folder) and headline."""
    every = {"max_questions": 1, "target": "all"}  # one estimate explains the four answers
    root = tmp_path_factory.mktemp("certified_rerun")
    cfg = _certified(artifacts, root, certified_rerun=True, certified_max_evals=8, **every)
    return cfg, run_task("attribute", attribute_stage.run, cfg)  # as `dvc repro` runs it: headline.json too


@pytest.mark.slow  # the certified_rerun fixture's two runs through the stage
def test_a_certified_rerun_puts_app_b4_vector_figures_in_the_attribute_metrics(certified_rerun):
    """attribution.certified_rerun: the attribute stage estimates every question again with other shifts;
    per answer the cosine and relative distance of the two written vectors (recomputed here with numpy) go
    to rerun_vectors.parquet, their median and worst to metrics.json and the headline (`dvc metrics show`),
    with the count of questions whose budget ran out."""
    cfg, headline = certified_rerun
    main = Path(cfg.paths.artifacts) / "attribute"
    rerun_dir = main / "rerun" / f"seed{cfg.attribution.seed + 1}"
    assert set(read_attributions(rerun_dir)["seed"]) == {cfg.attribution.seed + 1}  # other shifts
    ours, theirs = _vectors(main), _vectors(rerun_dir)
    figures = read_parquet(main / "rerun_vectors.parquet").set_index(["record_id", "target"])
    assert sorted(figures.index) == sorted(ours)
    for key, e in ours.items():
        other = theirs[key]
        cosine = float((e * other).sum() / (np.linalg.norm(e) * np.linalg.norm(other)))
        distance = float(np.linalg.norm(e - other) / np.linalg.norm(other))
        assert figures.loc[key, "cosine"] == pytest.approx(cosine, rel=1e-9)
        assert figures.loc[key, "relative_distance"] == pytest.approx(distance, rel=1e-9)
    assert (figures["relative_distance"] > 0).all()  # two estimates, not one run compared with itself
    assert headline["cos_median"] == pytest.approx(figures["cosine"].median())
    assert headline["cos_min"] == pytest.approx(figures["cosine"].min())
    assert headline["dist_median"] == pytest.approx(figures["relative_distance"].median())
    assert headline["dist_max"] == pytest.approx(figures["relative_distance"].max())
    metrics = json.loads((main / "metrics.json").read_text())
    assert metrics["rerun_cosine_min"] == headline["cos_min"]
    spent = read_attributions(rerun_dir).drop_duplicates("record_id")["grad_evals"]  # per question
    assert metrics["rerun_grad_evals"] == spent.sum()
    table = read_attributions(main)
    flagged = table.loc[table["budget_exhausted"], "record_id"].unique()
    assert headline["exhausted"] == len(flagged) == len(metrics["budget_exhausted"])


@pytest.mark.slow  # the certified_rerun fixture's two runs through the stage
def test_a_kept_attribute_run_holds_the_stage_outputs_as_written(certified_rerun, tmp_path: Path):
    """bench/keep_attribute_run.py, which writes results/certification/local_m*.json: the stage's metrics and
    headline as written, the rerun's metrics, each answer's figures from its parquet row (named
    ``<record id>/<target>``: one question's four answers) and its vector figures; a folder the stage did not
    write stops it with the file named, and nothing is written."""
    keep = load_bench_script("keep_attribute_run")
    cfg, headline = certified_rerun
    main = Path(cfg.paths.artifacts) / "attribute"
    about = ["--command", "c", "--from", "f", "--machine", "m", "--wall-clock", "w", "--date", "2026-12-02"]
    keep.main(["--attribute", str(main), "--out", str(tmp_path / "kept.json"), *about])
    kept = json.loads((tmp_path / "kept.json").read_text())
    assert {k: kept[k] for k in ("command", "date", "from", "machine", "wall_clock")} == {
        "command": "c",
        "date": "2026-12-02",
        "from": "f",
        "machine": "m",
        "wall_clock": "w",
    }
    assert kept["metrics"] == json.loads((main / "metrics.json").read_text())
    assert kept["headline"] == json.loads((main / "headline.json").read_text()) == headline
    seed_dir = main / "rerun" / f"seed{cfg.attribution.seed + 1}"
    assert kept["rerun_metrics"] == json.loads((seed_dir / "metrics.json").read_text())
    for folder, part in ((main, "run"), (seed_dir, "rerun")):
        rows = read_attributions(folder)
        assert len(kept["questions"][part]) == len(rows) == 4  # one question, its four answers
        for r in rows.itertuples():
            figures = kept["questions"][part][f"{r.record_id}/{r.target}"]
            assert (figures["grad_evals"], figures["residual"]) == (r.grad_evals, r.residual)
            assert figures["budget_exhausted"] == bool(r.budget_exhausted)
            assert figures["points_a_reference_max"] == max(r.reference_points)
    vectors = read_parquet(main / "rerun_vectors.parquet")
    for r in vectors.itertuples():
        assert kept["questions"]["vectors"][f"{r.record_id}/{r.target}"]["cosine"] == r.cosine
    nowhere = tmp_path / "never_ran"
    with pytest.raises(SystemExit, match=r"never_ran/metrics\.json: missing artifact"):
        keep.main(["--attribute", str(nowhere), "--out", str(tmp_path / "none.json"), *about])
    assert not (tmp_path / "none.json").exists()


def test_without_a_rerun_the_attribute_stage_gives_no_vector_figure(artifacts: Path, tmp_path: Path):
    """No attribution.certified_rerun: nothing was compared, so no figure (rather than a perfect one), an
    empty rerun_vectors.parquet and a rerun index naming no run."""
    without = attribute_stage.run(_certified(artifacts, tmp_path, certified_max_evals=8, max_questions=1))
    assert not {"cos_median", "cos_min", "dist_median", "dist_max"} & set(without)
    assert {"R_max", "R_median", "exhausted"} <= set(without)
    assert read_parquet(tmp_path / "attribute" / "rerun_vectors.parquet").empty
    assert json.loads((tmp_path / "attribute" / "rerun" / "index.json").read_text())["rerun"] == {}
