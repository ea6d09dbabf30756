"""The smoke experiment end to end through ``dvc repro`` in a temporary copy of the project.

Proves: every stage runs and leaves its artifacts; a second ``dvc repro`` runs nothing; changing one
attribution parameter invalidates only the attribution stage and what is downstream of it; editing any
file a stage imports makes ``dvc status`` report exactly the stages importing it; changing a gate
threshold reruns only what reads it; every table cell
checked here equals the artifact it comes from (recomputed independently where possible);
``xurs explain`` works on the trained smoke model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from smoke_project import BIN, changed_deps, dvc_status, run_any, run_ok

from xurs_pipeline.cli import main as xurs
from xurs_pipeline.contracts import STAGES
from xurs_pipeline.dvc_yaml import stage_code

WHOLE_CONFIG = {"check", "tables", "report"}  # validate the whole config, or stamp its hash into their pages
BEFORE_ATTRIBUTION = {"backbone", "prepare", "train_head", "train", "predict", "gates", "train_swap"}
DOWNSTREAM_OF_ATTRIBUTE = {
    "check",
    "attribute",
    "attribute_repeats",
    "attribute_targets",
    "attribute_compare",
    "mask_eval",
    "checks",
    "tables",
    "report",
    "attribute_swap",
}
# the swap stage reads the attribution settings through the attributions it reads, not as params


_run = run_ok


@pytest.fixture
def project(smoke_project: Path) -> Path:
    """The session's smoke project (tests/smoke_project.py), built by ``dvc repro`` once."""
    return smoke_project


@pytest.mark.slow
def test_every_stage_leaves_its_outputs_and_a_second_repro_runs_nothing(project: Path) -> None:
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    assert set(stages) == BEFORE_ATTRIBUTION | DOWNSTREAM_OF_ATTRIBUTE | {"swap"}
    for path in (
        "data/backbone/model.safetensors",
        "data/prepared/prompts.parquet",
        "data/train/classifier/classifier.json",
        "data/predict/predictions.parquet",
        "data/gates/gates.parquet",
        "data/gates/gates.json",
        "data/attribute/attributions.parquet",
        "data/mask_eval/per_question.parquet",
        "data/checks/checks.parquet",
        "results/tables/table1_effects.tex",
        "results/plots/topk_curve.png",
        "results/html/index.html",
    ):
        assert (project / path).is_file(), path
    front = (project / "results/html/index.html").read_text()
    for fact in (
        "At a glance",
        "Accuracy against chance",
        "Table 1: zero-masking advantage",
        "Attribution checks: ",
        "Controlled-model gates",
        "Plots",
    ):
        assert fact in front, fact
    links = re.findall(r'(?:href|src)="([^"#]+)"', front)
    assert any(link.startswith("tables/") for link in links)
    assert any(link.startswith("../plots/") for link in links)
    for link in links:  # every table, plot and explanation page the front page links exists
        assert (project / "results/html" / link).is_file(), link
    shown = _run([str(BIN / "dvc"), "metrics", "show"], project).stdout  # headline metrics only
    # one row a headline file, every column a headline key: it fits a 240-column terminal with App. B.4's
    # vector figure against a rerun (cos_rerun, dist_rerun) and the exhausted budgets among them
    assert max(len(line) for line in shown.splitlines()) <= 240, shown
    assert {"accuracy", "chance", "advantage", "checks_failed", "gates_failed"} <= set(shown.split())
    again = _run([str(BIN / "dvc"), "repro"], project).stdout
    assert "Running stage" not in again
    assert "Data and pipelines are up to date" in again


@pytest.mark.slow
def test_changing_one_attribution_parameter_invalidates_only_downstream_stages(project: Path) -> None:
    params = project / "params.yaml"
    original = params.read_text()
    try:
        params.write_text(original.replace("  n_samples: 16\n", "  n_samples: 24\n", 1))
        status = json.loads(_run([str(BIN / "dvc"), "status", "--json"], project).stdout)
    finally:
        params.write_text(original)
    # dvc status lists the stages whose own params changed (mask_eval follows once attributions change);
    # nothing upstream of attribute is touched except `check`, which watches every key and reruns first.
    assert "attribute" in status
    assert set(status) <= DOWNSTREAM_OF_ATTRIBUTE
    # mask_eval reads the attribution config too (the comparison targets' run fingerprints).
    assert set(status) == DOWNSTREAM_OF_ATTRIBUTE  # the swap stages read the attribution config too


@pytest.mark.slow
def test_editing_any_imported_file_reruns_exactly_the_stages_that_import_it(project: Path) -> None:
    closures = {name: set(stage_code(name, project)) for name in STAGES}
    files = sorted(set().union(*closures.values()))
    originals = {f: (project / f).read_bytes() for f in files}
    try:
        for f in files:
            (project / f).write_bytes(originals[f] + b"\n# edited\n")
        status = dvc_status(project)
    finally:
        for f, text in originals.items():
            (project / f).write_bytes(text)
    assert set(status) == set(STAGES)
    for name, closure in closures.items():
        assert changed_deps(status[name]) == closure, name
    assert "xurs_pipeline/io.py" in closures["prepare"]  # io.py and config.py were deps of no stage
    assert "xurs_pipeline/config.py" in closures["mask_eval"]
    assert dvc_status(project) == {}


def _status_after(project: Path, old: str, new: str) -> dict[str, list]:
    """``dvc status`` with ``old`` (once in params.yaml) replaced by ``new``; params.yaml restored."""
    params = project / "params.yaml"
    original = params.read_text()
    assert original.count(old) == 1, old
    try:
        params.write_text(original.replace(old, new))
        return dvc_status(project)
    finally:
        params.write_text(original)


@pytest.mark.slow
def test_a_medqa_key_on_synthetic_data_stales_no_stage_that_runs_the_data(project: Path) -> None:
    """Issue 56: ``data.medqa_path`` marked all 13 stages stale on the (synthetic) smoke data; prepare lists
    only its source's data keys, the prompts' hash covers only them, and no later stage lists data.*."""
    status = _status_after(project, "  medqa_path: data/medqa\n", "  medqa_path: elsewhere/medqa\n")
    assert set(status) == WHOLE_CONFIG
    assert not set(status) & {"prepare", "train", "swap", "attribute_swap", "train_swap"}
    seed = _status_after(
        project,
        "data:\n  source: synthetic_v1\n  max_tokens: 512\n  seed: 0\n",
        "data:\n  source: synthetic_v1\n  max_tokens: 512\n  seed: 1\n",
    )
    assert set(seed) == WHOLE_CONFIG | {"prepare"}  # a key the data reads: prepare reruns, the rest follows


@pytest.mark.slow
def test_no_attribution_key_stales_backbone_prepare_or_training(project: Path) -> None:
    """Issue 55, item 5 and issue 56: choosing questions (record_ids, max_questions, split) or an
    estimator setting reruns the attribution stages and what reads them, never training."""
    record = pd.read_parquet(project / "data/prepared/prompts.parquet", columns=["record_id", "split"])
    test_id = record[record["split"] == "test"]["record_id"].iloc[0]
    for old, new in (
        ("  n_samples: 16\n", "  n_samples: 24\n"),
        ("  max_questions: 0\n  record_ids: []\n", "  max_questions: 2\n  record_ids: []\n"),
        ("  record_ids: []\n", f"  record_ids:\n  - {test_id}\n"),
        ("  split: test\n", "  split: dev\n"),
    ):
        status = _status_after(project, old, new)
        assert "attribute" in status, new
        assert not set(status) & BEFORE_ATTRIBUTION, (new, sorted(status))


@pytest.mark.slow
def test_unknown_record_ids_stop_dvc_repro_before_any_output_is_deleted(project: Path) -> None:
    """Issue 55, item 5: ``record_ids=[nosuch]`` passed ``xurs check``, then ``dvc repro`` deleted
    ``data/train/classifier`` before the train stage refused it. Now the check stage refuses it against the
    prepared prompts, first."""
    params = project / "params.yaml"
    original = params.read_text()
    kept = [project / "data/train/classifier/classifier.json", project / "data/attribute/metrics.json"]
    try:
        params.write_text(original.replace("  record_ids: []\n", "  record_ids:\n  - nosuch\n"))
        checked = run_any([str(BIN / "xurs"), "check"], project)
        repro = run_any([str(BIN / "dvc"), "repro"], project)
        assert all(path.is_file() for path in kept)
    finally:
        params.write_text(original)
        _run([str(BIN / "dvc"), "repro"], project)  # check.json back (its stage failed)
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert repro.returncode != 0
    for said in (checked.stderr, repro.stdout + repro.stderr):
        assert "attribution.record_ids: ['nosuch'] not in the prepared prompts" in said
    assert "Running stage 'train'" not in repro.stdout
    assert dvc_status(project) == {}


@pytest.mark.slow
def test_changing_a_gate_threshold_reruns_only_what_reads_it(project: Path) -> None:
    params = project / "params.yaml"
    original = params.read_text()
    assert original.count("    accuracy_min: 0.8\n") == 1
    try:
        params.write_text(original.replace("    accuracy_min: 0.8\n", "    accuracy_min: 0.75\n"))
        status = dvc_status(project)
    finally:
        params.write_text(original)
    # The report and tables carry the hash of the whole config and `check` validates all of it (its stamp
    # does not change, so nothing after it reruns for that); zero-masking and checks do not read gates.
    assert set(status) == {"check", "gates", "tables", "report"}


@pytest.mark.slow
def test_table_cells_equal_the_artifacts(project: Path) -> None:
    tables = project / "results" / "tables"
    mask = json.loads((project / "data/mask_eval/metrics.json").read_text())["targets"]["width"]
    effects = pd.read_csv(tables / "table1_effects.csv").set_index("target_fn")  # one row per target
    assert effects.loc["width", "mean_advantage"] == pytest.approx(mask["mean_advantage"], abs=0)
    per_question = pd.read_parquet(project / "data/mask_eval/per_question.parquet")
    width_rows = per_question[per_question["target_fn"] == "width"]
    assert mask["mean_advantage"] == pytest.approx(width_rows["advantage"].mean(), rel=1e-12, abs=1e-15)

    predictions = pd.read_parquet(project / "data/predict/predictions.parquet")
    test = predictions[predictions["split"] == "test"]
    correction = pd.read_csv(tables / "table8_correction.csv")
    assert correction.loc[0, "rescaling_pct"] == pytest.approx(100 * (test["s"] > 1 + 1e-6).mean())
    accuracy = pd.read_csv(tables / "accuracy.csv").set_index("split")
    assert accuracy.loc["test", "accuracy"] == pytest.approx(test["correct"].mean())

    prompts = pd.read_parquet(project / "data/prepared/prompts.parquet").set_index("record_id")
    fit = pd.read_csv(tables / "table10_fit.csv").set_index("split")
    target = np.stack(prompts.loc[test["record_id"], "target_masses"].to_numpy())
    error = np.abs(np.stack(test["masses"].to_numpy()) - target).sum(axis=1).mean()
    assert fit.loc["test", "mass_error"] == pytest.approx(error)

    attributions = pd.read_parquet(project / "data/attribute/attributions.parquet")
    numerics = pd.read_csv(tables / "table2_numerics.csv")
    assert numerics.loc[0, "residual"] == pytest.approx(np.median(attributions["residual"]))
    # the repeated run (attribute_repeats, seed 17) fills Table 2's rank and vector columns
    repeat = pd.read_parquet(project / "data/checks/details/compare_seed17.parquet")
    assert numerics.loc[0, "spearman"] == pytest.approx(np.median(repeat["spearman"]))
    assert numerics.loc[0, "relative_distance"] == pytest.approx(np.median(repeat["relative_distance"]))
    assert not numerics[["spearman", "residual", "relative_distance"]].isna().any().any()
    checks = pd.read_parquet(project / "data/checks/checks.parquet")
    gates = pd.read_parquet(project / "data/gates/gates.parquet")
    assert {"dev", "test"} == set(gates["split"])  # V1 smoke data: familiar templates only
    verdicts = pd.read_csv(tables / "verdicts.csv")
    both = np.concatenate([checks["value"].to_numpy(), gates["value"].to_numpy()])
    assert verdicts["value"].to_numpy() == pytest.approx(both, nan_ok=True)
    gate_table = pd.read_csv(tables / "gates.csv")
    assert gate_table["value"].to_numpy() == pytest.approx(gates["value"].to_numpy(), nan_ok=True)
    assert (verdicts["config_hash"] == effects["config_hash"].iloc[0]).all()
    targets = pd.read_csv(tables / "targets_comparison.csv").set_index("target_fn")
    masked = json.loads((project / "data/mask_eval/metrics.json").read_text())["targets"]
    assert set(targets.index) == {"width", "entropy", "betp"} == set(masked)
    assert targets.loc["entropy", "mean_advantage"] == pytest.approx(masked["entropy"]["mean_advantage"])
    # which target's attribution finds the clue (Sec. 7): the width's rows are Table 9's summary, which the
    # checks stage computes on its own
    located = pd.read_csv(tables / "targets_localisation.csv").set_index(["target_fn", "region"])
    summary = pd.read_csv(tables / "table9_localisation_summary.csv").set_index("region")
    assert set(located.index.get_level_values(0)) == {"width", "entropy", "betp"}
    for region in summary.index:
        for key in ("questions", "mean_clue_share_pct", "mean_difference_pp", "best_rank_1_share"):
            assert located.loc[("width", region), key] == pytest.approx(summary.loc[region, key], nan_ok=True)
    # every explained answer's error, named: the table's R and bound are the attribution rows'
    error = pd.read_csv(tables / "attribution_error.csv").set_index(["record_id", "target"]).sort_index()
    rows = attributions.set_index(["record_id", "target"]).sort_index()
    assert error.index.equals(rows.index)
    assert error["residual"].to_numpy() == pytest.approx(rows["residual"].to_numpy())
    assert error["error_bound"].to_numpy() == pytest.approx(rows["error_bound"].to_numpy(), nan_ok=True)
    assert (error["budget"] == np.where(rows["budget_exhausted"], "RAN OUT", "met")).all()
    stage = json.loads((project / "data/attribute/metrics.json").read_text())
    per_question = attributions.groupby("record_id")["grad_evals"].first()  # one budget a question
    assert stage["grad_evals_median"] == per_question.median()
    assert stage["grad_evals"] == per_question.sum()
    assert "Attribution error" in (project / "results/html/index.html").read_text()


@pytest.mark.slow
def test_explain_uses_the_pipelines_settings_and_matches_the_report(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from the project with no settings: params.yaml's attribution section, the pipeline's classifier
    and prompts, so the explanation is the attribute stage's for that question; the page goes to results/."""
    attributions = pd.read_parquet(project / "data/attribute/attributions.parquet")
    row = attributions.iloc[0]
    monkeypatch.chdir(project)
    assert xurs(["explain", "--record-id", row.record_id, "--top", "3", "--save", "explain.json"]) == 0
    out = capsys.readouterr().out
    assert f"{row.record_id}: explained answer {'ABCD'[int(row.target)]}" in out
    assert len([line for line in out.splitlines() if line.strip().startswith(("1 ", "2 ", "3 "))]) == 3
    saved = json.loads((project / "explain.json").read_text())
    assert saved["residual"] == pytest.approx(float(row.residual), rel=1e-4, abs=1e-7)
    assert np.allclose(saved["token_magnitude"], np.asarray(row.token_magnitude), rtol=1e-4, atol=1e-9)
    assert "<svg" in (project / "results/explain" / f"{row.record_id}.html").read_text()


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        (["attribution.n_samples=64", "train.lr_head=0.5"], "stage train ran with train.lr_head="),
        (["attribution.n_samples=64"], "stage attribute ran with attribution.n_samples="),
    ],
)
def test_tables_and_report_refuse_artifacts_made_under_other_settings(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    overrides: list[str],
    why: str,
) -> None:
    """``xurs params ... attribution.n_samples=64 train.lr_head=0.5`` without ``dvc repro``: both commands
    labelled the old run's numbers with the new settings (Table 5 said 64 samples) and replaced the DVC
    outputs with them; now each refuses in one line, naming what moved, and writes nothing."""
    from xurs_pipeline.commands.rebuild import check_made_with

    moved = tmp_path / "params.yaml"
    compose = ["params", "--out", str(moved), "--no-dvc-yaml", "experiment=smoke", *overrides]
    run_ok([str(BIN / "xurs"), *compose], project)
    results = {p: p.read_bytes() for p in (project / "results").rglob("*") if p.is_file()}
    monkeypatch.chdir(project)
    for command in ("tables", "report"):
        assert xurs([command, "--params", str(moved)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith(f"xurs {command}: error: {moved} has moved on since "), line
        assert why in line
        assert f"run `dvc repro {command}` first" in line
    assert {p: p.read_bytes() for p in (project / "results").rglob("*") if p.is_file()} == results
    for command in ("tables", "report"):  # the artifacts dvc repro made with params.yaml: nothing moved
        check_made_with(command, project / "params.yaml", project)
