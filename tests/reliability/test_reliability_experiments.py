"""Cross-experiment tables show each experiment's own results or none: an experiment that did not run a
stage (stopped early by ``xurs sweep --stage``, queued, failed, interrupted) keeps its baseline's
``dvc.lock`` entry, and ``xurs gates-sweep`` / ``xurs swap-sweep`` must name it, never tabulate the
baseline's output under its params. The repositories here hold experiments as DVC leaves them
(tests/experiment_repo.py); the same cases end to end from a fresh clone:
tests/foundation/test_foundation_experiments.py."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from experiment_repo import GATES, SWAP, new_repo, params, show, show_entry

from xurs_pipeline.cli import main as xurs
from xurs_pipeline.experiments.lock import not_run, read_lock

SUMMARY = f"{SWAP}/summary.json"


def gates(accuracy: float) -> dict:
    return {
        "dev": {
            "valid_share": 1.0,
            "familiar": {"accuracy_with_result": accuracy},
            "passed": False,
            "n_failed": 1,
            "n_checks": 2,
        }
    }


def study(clear: tuple[int, int], as_trained: int = 15) -> dict:
    counts = {
        f"{p}_{c}": v
        for p in ("swap", "agreement", "agreement_A", "agreement_B", "agreement_clear")
        for c, v in zip("kn", clear, strict=True)
    }
    return {"methods": {"paper": counts}, "behaves_as_trained": {r: {"k": as_trained, "n": 16} for r in "AB"}}


def run_sweep(command: str, tmp: Path, experiments: list[dict], baseline: tuple[str, dict], *flags: str):
    saved = tmp / "show.json"
    saved.write_text(json.dumps(show(baseline[0], baseline[1], *experiments)))
    return xurs([command, "--from", str(saved), "--out", str(tmp / "out"), *flags])


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A baseline commit that ran predict, gates and swap with train.seed=7; the commands run in it."""
    made = new_repo(tmp_path / "repo")
    tree = params(seed=7)
    rev = made.commit(tree, ("predict", "gates", "swap"), {GATES: gates(0.5), SUMMARY: study((25, 27))})
    monkeypatch.chdir(made.root)
    return made, rev, tree


def test_an_experiment_stopped_before_gates_is_named_not_given_the_baselines_gates(repo, tmp_path, capsys):
    """``xurs sweep --stage check train.seed=23``: its lock still holds seed 7's predict and gates."""
    made, base, tree = repo
    early = made.commit(params(seed=23), (), {})
    up_to_predict = made.commit(params(seed=17), ("predict",), {})
    ran = made.commit(params(seed=5), ("predict", "gates"), {GATES: gates(0.75)})
    exps = [
        show_entry("early", early, params(seed=23)),
        show_entry("predict-only", up_to_predict, params(seed=17)),
        show_entry("ran", ran, params(seed=5)),
    ]
    assert run_sweep("gates-sweep", tmp_path, exps, (base, tree)) == 0
    table = pd.read_csv(tmp_path / "out" / "gates_sweep.csv").set_index("name")
    assert sorted(table.index) == ["master", "ran"]
    assert table.loc["ran", "familiar.accuracy_with_result"] == 0.75
    assert table.loc["master", "familiar.accuracy_with_result"] == 0.5
    err = capsys.readouterr().err
    not_its = "data/gates/gates.json: not this experiment's"
    assert f"left out early: {not_its} (stage predict ran with train.seed=7, not train.seed=23)" in err
    assert (
        f"left out predict-only: {not_its} (stage gates ran on another data/predict/predictions.parquet "
        "than stage predict made in it)" in err
    )


@pytest.mark.parametrize("state", ["running", "queued", "failed"])
def test_unfinished_experiments_are_named_not_tabulated(repo, tmp_path, capsys, state):
    """A Ctrl-C'd ``dvc exp run`` stays "running" in ``dvc exp show``: whatever its lock holds, no row."""
    made, base, tree = repo
    rev = made.commit(params(seed=5), ("predict", "gates"), {GATES: gates(0.75)})
    assert (
        run_sweep("gates-sweep", tmp_path, [show_entry("x", rev, params(seed=5), state)], (base, tree)) == 0
    )
    assert list(pd.read_csv(tmp_path / "out" / "gates_sweep.csv")["name"]) == ["master"]
    assert f"left out x: experiment {state}" in capsys.readouterr().err


def test_the_swap_sweep_never_counts_the_baselines_study_under_an_experiments_seed(repo, tmp_path, capsys):
    """The issue's case: a point stopped at ``check`` pooled with its baseline gave 50/54 and a pass."""
    made, base, tree = repo
    early = made.commit(params(seed=23), (), {})
    assert run_sweep("swap-sweep", tmp_path, [show_entry("early", early, params(seed=23))], (base, tree)) == 0
    table = pd.read_csv(tmp_path / "out" / "swap_sweep.csv").set_index("row")
    assert table.loc["paper", "agreement_clear_text"].endswith("(25/27)")
    assert "early" not in table.columns
    assert (
        "left out early: data/swap/study/summary.json: not this experiment's (stage predict ran with "
        "train.seed=7, not train.seed=23" in capsys.readouterr().err
    )


def test_a_stage_is_the_experiments_only_with_its_params_and_its_inputs(tmp_path):
    """The decision itself, against each way a lock entry can be another run's."""
    made = new_repo(tmp_path)
    made.commit(params(seed=7), ("predict", "gates", "swap"), {GATES: gates(0.5), SUMMARY: study((1, 2))})
    lock = read_lock("HEAD", tmp_path)
    from experiment_repo import flatten

    own = flatten(params(seed=7))
    assert [not_run(lock, own, s) for s in ("predict", "gates", "swap")] == ["", "", ""]
    other = flatten(params(seed=7, method="ig"))
    assert not_run(lock, other, "gates") == ""  # gates reads no attribution key
    assert (
        not_run(lock, other, "swap")
        == 'stage swap ran with attribution.method="eg", not attribution.method="ig"'
    )
    assert not_run(lock, {k: v for k, v in own.items() if k != "train.lr_head"}, "gates") == (
        "stage predict ran with train.lr_head=0.05, a key these params lack"
    )
    assert not_run(lock, own, "train") == "stage train never ran"
    with pytest.raises(ValueError, match="commit 0000000 is not in the repository here"):
        read_lock("0" * 40, tmp_path)


def test_a_lock_is_read_as_dvc_writes_it(tmp_path):
    """DVC writes ``1e-06`` (YAML 1.2: a number), which PyYAML reads as text: read as text, every stage
    with such a param (the gates' validity tolerance) would count as not run."""
    (tmp_path / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  gates:\n    params:\n      params.yaml:\n"
        "        evaluation.gates:\n          validity_tolerance: 1e-06\n"
    )
    lock = read_lock("workspace", tmp_path)
    key = "evaluation.gates.validity_tolerance"
    assert not_run(lock, {key: 1e-06}, "gates") == ""
    assert not_run(lock, {key: 1e-05}, "gates") == f"stage gates ran with {key}=1e-06, not {key}=1e-05"
    assert read_lock("workspace", tmp_path / "nothing_ran") == {}


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{}", "not `dvc exp show --json` output: expected a list of objects with a 'rev' key"),
        ("[1, 2]", "expected a list of objects with a 'rev' key"),
        ('[{"rev": "abc", "experiments": {"revs": []}}]', "'experiments' is not a list of objects"),
        ('[{"rev": "abc", "experiments": [{"revs": {"a": 1}}]}]', "'revs' is not a list of objects"),
        ('[{"rev": "abc", "data": {"params": [1]}}]', "'params' is not an object of objects"),
        ("[{]", "not JSON"),
    ],
)
@pytest.mark.parametrize("command", ["swap-sweep", "gates-sweep"])
def test_a_from_file_that_is_not_dvc_exp_show_output_is_one_line(tmp_path, capsys, command, content, words):
    """``--from`` a JSON file of another shape ended in a traceback."""
    saved = tmp_path / "show.json"
    saved.write_text(content)
    assert xurs([command, "--from", str(saved), "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"xurs {command}: error: --from {saved}: "), line
    assert words in line


def test_a_constant_stamp_upstream_does_not_make_later_stages_anothers(tmp_path):
    """``check`` reads every param but writes the same check.json: after a change only ``train.*`` reads,
    ``prepare`` (after check) is still the workspace's own, ``predict`` is not."""
    stamp = {"path": "data/check.json", "hash": "md5", "md5": "c0"}
    lock = {
        "check": {"params": {"params.yaml": {"train": {"seed": 7}, "data": {"seed": 1}}}, "outs": [stamp]},
        "prepare": {
            "params": {"params.yaml": {"data.seed": 1}},
            "deps": [stamp],
            "outs": [{"path": "data/prepared", "md5": "p0"}],
        },
        "predict": {
            "params": {"params.yaml": {"train.seed": 7}},
            "deps": [{"path": "data/prepared", "md5": "p0"}],
        },
    }
    moved = {"train.seed": 8, "data.seed": 1}
    assert not_run(lock, moved, "check") == "stage check ran with train.seed=7, not train.seed=8"
    assert not_run(lock, moved, "prepare") == ""
    assert not_run(lock, moved, "predict") == "stage predict ran with train.seed=7, not train.seed=8"
    lock["prepare"]["deps"] = [{**stamp, "md5": "c1"}]  # another stamp than check made: not its run
    assert (
        not_run(lock, moved, "prepare")
        == "stage prepare ran on another data/check.json than stage check made in it"
    )
