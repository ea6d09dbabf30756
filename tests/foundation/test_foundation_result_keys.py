"""Every key a stage reads is in its params, for the shipped experiments beyond smoke, and no key that changes
no result is: ``data.swap_order`` reruns ``prepare`` and all after it; the paper estimators' keys a method
never reads (``attribution.n_samples`` under a token method) and the progress bar rerun and stamp nothing,
and ``xurs check`` and ``xurs params`` name the ignored ones."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import yaml
from params_reads import Reads, recording, unlisted_reads

from xurs_pipeline.attribution.config import ESTIMATOR_KEYS, METHODS, unread_keys
from xurs_pipeline.cli import main
from xurs_pipeline.config import attribution_fingerprint, compose, rerun_config, validate
from xurs_pipeline.contracts import STAGES, param_keys, prompts_hash, stage_hash
from xurs_pipeline.dvc_yaml import render
from xurs_pipeline.reporting.build_tables import ATTRIBUTION_KEYS, attribution_keys
from xurs_pipeline.tasks.check import check_params
from xurs_pipeline.tasks.runner import run_task, stage_task

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
# the stages that run the configured attribution method alone (the others run other methods too)
MAIN_METHOD_STAGES = ("attribute", "attribute_repeats", "attribute_targets", "mask_eval", "checks")


def _composed(*overrides: str) -> dict:
    return compose(list(overrides), conf_dir=CONF)


def test_swap_order_is_a_param_of_prepare_and_of_the_prompts_hash() -> None:
    """``prepare`` reads ``data.swap_order`` (the cue order of every two-cue text): it is a param of prepare,
    so ``dvc repro`` reruns prepare and all after it, and the prompts' hash (the classifier's, the
    attributions') moves with it."""
    swap = _composed("experiment=controlled_swap")
    assert swap["data"]["swap_order"] == "counterbalanced"
    assert "data.swap_order" in param_keys("prepare", swap)
    assert "data.swap_order" in yaml.safe_load(render(swap, ROOT))["stages"]["prepare"]["params"]
    fixed = _composed("experiment=controlled_swap", "data.swap_order=fixed")
    assert prompts_hash(validate(fixed).data) != prompts_hash(validate(swap).data)
    assert stage_hash("train", validate(fixed)) == stage_hash("train", validate(swap))  # through the prompts


@pytest.mark.parametrize("method", [m for m in METHODS if m != "eg"])
def test_an_estimator_key_the_method_never_reads_reruns_and_stamps_nothing(method: str) -> None:
    """``attribution.n_samples`` (EG's) under another method: in no params list of the stages that run the
    method alone, their hashes and the run's fingerprint unchanged, not a Table 5 row; under EG it is all
    three. The other estimators' budgets likewise."""
    base = validate(_composed("experiment=smoke", f"attribution.method={method}"))
    unread = set(unread_keys(method))
    assert "n_samples" in unread
    for key in unread:
        default = type(base.attribution).__dataclass_fields__[key].default
        moved = replace(base, attribution=replace(base.attribution, **{key: _other(default)}))
        for stage in MAIN_METHOD_STAGES:
            assert f"attribution.{key}" not in param_keys(stage, asdict(base)), (stage, key)
            assert stage_hash(stage, moved) == stage_hash(stage, base), (stage, key)
        assert attribution_fingerprint(moved) == attribution_fingerprint(base), key
        assert key not in attribution_keys(asdict(moved))
    eg = validate(_composed("experiment=smoke"))
    more = replace(eg, attribution=replace(eg.attribution, n_samples=eg.attribution.n_samples + 1))
    assert all("attribution.n_samples" in param_keys(s, asdict(eg)) for s in MAIN_METHOD_STAGES)
    assert stage_hash("attribute", more) != stage_hash("attribute", eg)
    assert attribution_fingerprint(more) != attribution_fingerprint(eg)
    assert "n_samples" in attribution_keys(asdict(eg))
    assert set(ATTRIBUTION_KEYS) - set(attribution_keys(asdict(base))) == unread & set(ATTRIBUTION_KEYS)


def _other(default: object) -> object:
    """A valid value other than a key's default (a budget or count doubled, a tolerance halved, a rule
    swapped)."""
    if isinstance(default, bool):
        return not default
    if isinstance(default, (int, float)):
        return default / 2 if isinstance(default, float) else default * 2
    swapped = {"gausslegendre": "riemann_middle", "bound": "residual", "stop": "bound", "k15": "trapezoid"}
    return swapped[default]


def test_check_and_params_name_the_keys_the_method_ignores(tmp_path: Path, monkeypatch, capsys) -> None:
    """``xurs params experiment=smoke attribution.method=occlusion_token`` (smoke's preset sets EG's sample
    count) and ``xurs check`` say the sample count is ignored; with EG, nothing is named."""
    monkeypatch.chdir(tmp_path)
    overrides = [
        "experiment=smoke",
        "attribution.method=occlusion_token",
        "attribution.kronrod_max_evals=9000",
    ]
    assert main(["params", "--conf", str(CONF), "--no-dvc-yaml", *overrides]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "ignored" in line)
    assert "attribution.n_samples=16 (eg)" in line
    assert "attribution.kronrod_max_evals=9000 (kronrod)" in line
    assert "attribution.method='occlusion_token' never reads them" in line
    check_params(Path("params.yaml"), None)
    assert "ignored: attribution.n_samples=16 (eg)" in capsys.readouterr().out
    assert main(["params", "--conf", str(CONF), "--no-dvc-yaml", "--force", "experiment=smoke"]) == 0
    assert "ignored" not in capsys.readouterr().out
    check_params(Path("params.yaml"), None)
    assert "ignored" not in capsys.readouterr().out


def test_the_progress_bar_is_in_no_stages_params() -> None:
    """``attribution.progress`` changes no result: in no params list (the check alone lists the whole file, to
    validate every key), not in any stage's hash nor the fingerprint; every estimator key is one that only
    some methods read."""
    composed = _composed("experiment=smoke")
    cfg = validate(composed)
    quiet = replace(cfg, attribution=replace(cfg.attribution, progress=False))
    rendered = yaml.safe_load(render(composed, ROOT))["stages"]
    for name in STAGES:
        assert "attribution.progress" not in param_keys(name, composed), name
        assert (rendered[name]["params"] == [{"params.yaml": None}]) == (name == "check"), name
        assert "attribution.progress" not in rendered[name]["params"], name
        if name != "check":
            assert stage_hash(name, quiet) == stage_hash(name, cfg), name
    assert attribution_fingerprint(quiet) == attribution_fingerprint(cfg)
    assert all(set(readers) <= set(METHODS) for readers in ESTIMATOR_KEYS.values())


def _medqa(folder: Path) -> None:
    """MedQA-format dev and test files where ``data.medqa_files`` looks for them."""
    files = folder / "US" / "4_options"
    files.mkdir(parents=True)
    for split, n in (("dev", 20), ("test", 4)):
        question = (
            "A {} patient {} has had fever for {} days. Which of the following is the most likely diagnosis?"
        )
        rows = [
            {
                "question": question.format(split, i, i + 2),
                "options": {k: f"{k} disease {i}" for k in "ABCD"},
                "answer_idx": "ABCD"[i % 4],
            }
            for i in range(n)
        ]
        text = "".join(json.dumps(r) + "\n" for r in rows)
        (files / f"phrases_no_exclude_{split}.jsonl").write_text(text)


@pytest.mark.parametrize(
    "experiment", ["controlled_swap", "controlled_v1", "controlled_direct", "medqa_local"]
)
def test_the_first_stages_of_each_experiment_list_every_key_they_read(experiment, tmp_path, monkeypatch):
    """check, backbone and prepare of the swap, controlled and MedQA experiments (on the tiny model, in this
    process) read no key they do not list (tests/params_reads.py): the keys only one experiment's data
    reads, such as the swap data's ``data.swap_order``, are seen here and not on the smoke data."""
    monkeypatch.chdir(tmp_path)
    composed = _composed(f"experiment={experiment}")
    composed["model"] = _composed("experiment=smoke")["model"]  # the tiny model: no download
    composed["paths"] = {"artifacts": str(tmp_path / "data"), "results": str(tmp_path / "results")}
    if composed["data"]["source"] == "medqa":
        _medqa(tmp_path / "medqa")
        composed["data"]["medqa_path"] = str(tmp_path / "medqa")
    cfg = validate(composed)
    reads: Reads = {}
    for name in ("check", "backbone", "prepare"):
        run_task(name, stage_task(name), recording(cfg, reads))
    assert reads["prepare"], "the recorder saw prepare read nothing"
    assert unlisted_reads(reads, asdict(cfg)) == {}
    if experiment == "controlled_swap":
        assert "data.swap_order" in reads["prepare"]


def test_dvc_yaml_lists_every_methods_keys_so_an_experiment_may_change_the_method() -> None:
    """``dvc.yaml`` is written for one experiment, and ``dvc exp run -S experiment=controlled_swap`` (kronrod)
    runs under it: the attribute stage lists every estimator's keys there, while its hash and the start
    check read only the method's (``param_keys``)."""
    smoke = _composed("experiment=smoke")
    listed = yaml.safe_load(render(smoke, ROOT))["stages"]["attribute"]["params"]
    swap = _composed("experiment=controlled_swap")
    assert "attribution.kronrod_max_evals" in param_keys("attribute", swap)
    assert "attribution.kronrod_max_evals" not in param_keys("attribute", smoke)  # smoke's method reads none
    assert set(param_keys("attribute", swap)) <= set(listed)


def test_the_attribute_stages_own_rerun_reruns_that_stage_alone() -> None:
    """``attribution.certified_rerun`` (under ``certified``) is a param of the attribute stage, which it
    makes estimate every question twice, and of no other stage that runs the method alone; the main run's
    rows do not depend on it, so neither its fingerprint nor the other stages' hashes move."""
    composed = _composed("experiment=smoke", "attribution=certified")
    assert composed["attribution"]["certified_rerun"] is True  # the preset's: the vector figures measured
    cfg = validate(composed)
    off = replace(cfg, attribution=replace(cfg.attribution, certified_rerun=False))
    assert "attribution.certified_rerun" in param_keys("attribute", composed)
    assert stage_hash("attribute", off) != stage_hash("attribute", cfg)
    for stage in MAIN_METHOD_STAGES[1:]:
        assert "attribution.certified_rerun" not in param_keys(stage, composed), stage
        assert stage_hash(stage, off) == stage_hash(stage, cfg), stage
    listed = yaml.safe_load(render(composed, ROOT))["stages"]
    assert "attribution.certified_rerun" in listed["attribute"]["params"]
    assert "attribution.certified_rerun" not in listed["checks"]["params"]
    assert attribution_fingerprint(off) == attribution_fingerprint(cfg)
    assert rerun_config(off) is None
    again = rerun_config(cfg)
    assert again is not None
    assert (again.attribution.seed, again.attribution.certified_rerun) == (cfg.attribution.seed + 1, False)
    assert attribution_fingerprint(again) != attribution_fingerprint(cfg)  # other shifts: another run
    wrapped = rerun_config(replace(cfg, attribution=replace(cfg.attribution, seed=2**32 - 1)))
    assert wrapped is not None
    assert wrapped.attribution.seed == 0  # within the seeds' range
