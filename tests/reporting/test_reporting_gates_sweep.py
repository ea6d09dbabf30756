"""``xurs gates-sweep`` on real ``dvc exp show --json`` output (DVC 3.67), trimmed.

The fixture comes from the smoke experiment run up to the gates stage three times
(``dvc exp run gates -S experiment=smoke -S train.seed=7`` / ``train.seed=17`` /
``train.seed=7 train.lr_head=0.05``) plus one queued run (``train.seed=23``), with params cut to
``train``, ``evaluation.gate_splits/gates`` and ``experiment_name``, metrics to predict's and the gates',
deps and outs emptied. The baseline commit ``master`` never ran the pipeline (its metrics are errors).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from xurs_pipeline.cli import main as xurs
from xurs_pipeline.reporting.gates_sweep import sweep_frame

FIXTURE = Path(__file__).with_name("dvc_exp_show_gates.json")
GATES = "data/gates/gates.json"


@pytest.fixture(scope="module")
def show() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def experiments(show: list[dict]) -> dict[str, dict]:
    """name -> ExpState of every experiment in the fixture, by walking its structure directly."""
    return {s["name"]: s for b in show for r in (b["experiments"] or []) for s in r["revs"]}


def expected_row(state: dict, split: str) -> dict[str, object]:
    entry = state["data"]["metrics"][GATES]["data"][split]
    train = state["data"]["params"]["params.yaml"]["data"]["train"]
    row = {
        "train.lr_head": train["lr_head"],
        "train.seed": train["seed"],
        "valid_share": entry["valid_share"],
    }
    row.update({f"familiar.{k}": v for k, v in entry["familiar"].items()})
    return {**row, "passed": entry["passed"], "n_failed": entry["n_failed"]}


@pytest.mark.parametrize("split", ["dev", "test"])
def test_one_row_per_finished_experiment_with_the_fixtures_gate_values(show, split):
    sweep = sweep_frame(show, split=split)
    states = experiments(show)
    assert list(sweep.frame["name"]) == ["lr05", "seed17", "seed7"]  # all fail 5: DVC's order kept
    assert sweep.params == ["train.lr_head", "train.seed"]  # the only params that differ
    assert sweep.gates[0] == "valid_share"
    assert set(sweep.left_out) == {"master", "queued23"}
    assert sweep.left_out["master"].startswith(f"{GATES} not found")
    assert sweep.left_out["queued23"].startswith("experiment queued")
    for row in sweep.frame.to_dict(orient="records"):
        expected = expected_row(states[row["name"]], split)
        assert {k: row[k] for k in expected} == expected
        assert set(row) == {"name", *expected}  # no unseen templates in V1 smoke data


def test_workspace_row_only_on_request_and_skipped_gates_are_left_out(show):
    assert "workspace" not in set(sweep_frame(show).frame["name"])
    with_ws = sweep_frame(show, workspace=True).frame.set_index("name")
    pd.testing.assert_series_equal(with_ws.loc["workspace"], with_ws.loc["lr05"], check_names=False)
    edited = copy.deepcopy(show)
    experiments(edited)["seed7"]["data"]["metrics"][GATES]["data"] = {"skipped": "prepared prompts lack ..."}
    sweep = sweep_frame(edited)
    assert "seed7" not in set(sweep.frame["name"])
    assert sweep.left_out["seed7"] == "gates skipped: prepared prompts lack ..."
    with pytest.raises(ValueError, match="dvc exp show --json"):
        sweep_frame({"rev": "workspace"})  # type: ignore[arg-type]


def test_command_writes_the_three_formats_and_prints_the_markdown(show, tmp_path, capsys):
    assert xurs(["gates-sweep", "--from", str(FIXTURE), "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    md = (tmp_path / "gates_sweep.md").read_text()
    assert out == md
    assert "| seed17 | 0.01 | 17 | 1.0000 |" in md
    assert "left out queued23: experiment queued" in err
    assert r"\newcommand{\GatesSweepRows}" in (tmp_path / "gates_sweep.tex").read_text()
    csv = pd.read_csv(tmp_path / "gates_sweep.csv").set_index("name")
    states = experiments(show)
    for name in ("lr05", "seed17", "seed7"):
        for key, value in expected_row(states[name], "dev").items():
            assert csv.loc[name, key] == value, (name, key)
    assert xurs(["gates-sweep", "--from", str(FIXTURE), "--split", "train", "--out", str(tmp_path)]) == 2
    assert "no experiment has 'train' gate metrics" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "expected"), [([], []), (["-A"], ["-A"]), (["--all-commits"], ["-A"])])
def test_all_commits_asks_dvc_for_every_commits_experiments(tmp_path, monkeypatch, flags, expected):
    """After a commit, `dvc exp show` lists only experiments based on the new HEAD; -A asks for all."""
    import subprocess

    calls = []

    def fake_run(command, **kwargs):
        if command[0] == "git":  # the gates detail of experiments whose metrics lack it: not committed
            return subprocess.CompletedProcess(command, 128, stdout="", stderr="fatal: path not in rev")
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=FIXTURE.read_text(), stderr="")

    monkeypatch.setattr("xurs_pipeline.commands.gates_sweep.subprocess.run", fake_run)
    assert xurs(["gates-sweep", *flags, "--out", str(tmp_path)]) == 0
    assert calls[0][1:] == ["exp", "show", "--json", *expected]
    assert "| seed17 |" in (tmp_path / "gates_sweep.md").read_text()


def test_a_second_sweep_goes_to_a_new_file_unless_overwrite(tmp_path, capsys):
    """Issue 19: the default run never replaces an earlier (committed) sweep table."""
    assert xurs(["gates-sweep", "--from", str(FIXTURE), "--out", str(tmp_path)]) == 0
    (tmp_path / "gates_sweep.md").write_text("committed sweep\n")
    assert xurs(["gates-sweep", "--from", str(FIXTURE), "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / "gates_sweep.md").read_text() == "committed sweep\n"
    assert "| seed17 |" in (tmp_path / "gates_sweep_2.md").read_text()
    assert f"wrote {tmp_path / 'gates_sweep_2.md'}" in err
    assert {p.name for p in tmp_path.iterdir()} == {
        f"gates_sweep{n}.{s}" for n in ("", "_2") for s in ("md", "tex", "csv")
    }
    assert xurs(["gates-sweep", "--from", str(FIXTURE), "--out", str(tmp_path), "--overwrite"]) == 0
    assert "| seed17 |" in (tmp_path / "gates_sweep.md").read_text()
    assert not (tmp_path / "gates_sweep_3.md").exists()


def test_missing_files_are_named_in_words_not_errno(show, tmp_path, capsys):
    """A commit whose gates never ran, and a --from file that does not exist: no raw ``[Errno 2]``."""
    master = next(b for b in show if b.get("name") == "master")
    assert "[Errno 2]" in master["data"]["metrics"][GATES]["error"]["msg"]  # what DVC reports
    sweep = sweep_frame(show, split="dev")
    assert sweep.left_out["master"] == (
        f"{GATES} not found (its stage did not run in this experiment, or the run failed before it)"
    )
    missing = tmp_path / "nope.json"
    assert xurs(["gates-sweep", "--from", str(missing), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--from {missing}: not found; save one with `dvc exp show --json > FILE`" in err
    assert "Errno" not in err


def test_gates_detail_is_read_from_the_experiments_commit_when_dvc_shows_only_the_headline(
    show, tmp_path, monkeypatch, capsys
):
    """gates.json is a detail file (not a DVC metric): the sweep reads it through DVC at each experiment's
    revision (``dvc.api``), which serves a git-tracked file from the commit as well as a DVC-cached one
    (the end-to-end case: tests/foundation/test_foundation_experiments.py)."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    states = experiments(show)
    commits, trimmed = {}, copy.deepcopy(show)
    for name in ("seed7", "seed17"):
        (tmp_path / "data" / "gates").mkdir(parents=True, exist_ok=True)
        (tmp_path / GATES).write_text(json.dumps(states[name]["data"]["metrics"][GATES]["data"]))
        git("add", "-A")
        git("commit", "-qm", name)
        commits[name] = git("rev-parse", "HEAD")
    (tmp_path / GATES).unlink()  # the workspace has none
    for name, state in experiments(trimmed).items():
        state["data"]["metrics"] = {"data/gates/headline.json": {"data": {"gates": 12, "gates_failed": 5}}}
        state["rev"] = commits.get(name, "0" * 40)
    saved = tmp_path / "show.json"
    saved.write_text(json.dumps(trimmed))
    monkeypatch.chdir(tmp_path)
    assert xurs(["gates-sweep", "--from", str(saved), "--out", str(tmp_path / "out")]) == 0
    csv = pd.read_csv(tmp_path / "out" / "gates_sweep.csv").set_index("name")
    assert sorted(csv.index) == ["seed17", "seed7"]
    assert "train.lr_head" not in csv.columns  # the same in both rows: lr05 is left out
    for name in ("seed17", "seed7"):
        for key, value in expected_row(states[name], "dev").items():
            assert key == "train.lr_head" or csv.loc[name, key] == value, (name, key)
    err = capsys.readouterr().err
    assert f"left out lr05: {GATES}: unknown Git revision '{'0' * 40}'" in err  # no such commit here
