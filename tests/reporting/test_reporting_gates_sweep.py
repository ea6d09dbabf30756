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
from experiment_repo import new_repo

from xurs_pipeline.cli import main as xurs
from xurs_pipeline.experiments.show import experiments as listed
from xurs_pipeline.experiments.show import flatten
from xurs_pipeline.reporting.gates_sweep import sweep_frame

FIXTURE = Path(__file__).with_name("dvc_exp_show_gates.json")
GATES = "data/gates/gates.json"
PATHS = {"artifacts": "data", "results": "results"}


@pytest.fixture(scope="module")
def show() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def experiments(show: list[dict]) -> dict[str, dict]:
    """name -> ExpState of every experiment in the fixture, by walking its structure directly."""
    return {s["name"]: s for b in show for r in (b["experiments"] or []) for s in r["revs"]}


def found(show: list[dict]) -> list[tuple[str, dict, dict]]:
    """(name, dotted params, gates.json) of each fixture experiment whose gates ran, walked directly."""
    return [
        (name, flatten(s["data"]["params"]["params.yaml"]["data"]), s["data"]["metrics"][GATES]["data"])
        for name, s in experiments(show).items()
        if "data" in s["data"]["metrics"].get(GATES, {})
    ]


@pytest.fixture
def project(show, tmp_path, monkeypatch) -> Path:
    """A repository holding the fixture's experiments as DVC leaves them (tests/experiment_repo.py): the
    baseline commit ran nothing, each finished experiment ran predict and gates; a --from copy of the
    fixture whose revisions are those commits (``show.json``). The commands run in it."""
    repo, saved = new_repo(tmp_path / "project"), copy.deepcopy(show)
    baseline = next(b for b in saved if b["rev"] != "workspace")
    baseline["rev"] = repo.commit({"paths": PATHS}, (), {})
    baseline["data"]["params"]["params.yaml"]["data"]["paths"] = PATHS
    for state in experiments(saved).values():
        tree = {**state["data"]["params"]["params.yaml"]["data"], "paths": PATHS}
        state["data"]["params"]["params.yaml"]["data"] = tree
        if GATES in state["data"]["metrics"] and "data" in state["data"]["metrics"][GATES]:
            state["rev"] = repo.commit(
                tree, ("predict", "gates"), {GATES: state["data"]["metrics"][GATES]["data"]}
            )
        state["data"]["metrics"] = {}  # gates.json is a detail file: DVC shows only the headline
    (repo.root / "show.json").write_text(json.dumps(saved))
    monkeypatch.chdir(repo.root)
    return repo.root


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
    sweep = sweep_frame(found(show), split=split)
    states = experiments(show)
    assert list(sweep.frame["name"]) == ["lr05", "seed17", "seed7"]  # all fail 5: DVC's order kept
    assert sweep.params == ["train.lr_head", "train.seed"]  # the only params that differ
    assert sweep.gates[0] == "valid_share"
    assert sweep.left_out == {}
    unfinished = {e.name: e.unfinished for e in listed(show)}
    assert unfinished == {
        "master": "",
        "lr05": "",
        "seed17": "",
        "seed7": "",
        "queued23": "experiment queued, not run yet",
    }
    for row in sweep.frame.to_dict(orient="records"):
        expected = expected_row(states[row["name"]], split)
        assert {k: row[k] for k in expected} == expected
        assert set(row) == {"name", *expected}  # no unseen templates in V1 smoke data


def test_workspace_row_only_on_request_and_skipped_gates_are_left_out(show):
    assert "workspace" not in {e.name for e in listed(show)}
    assert next(e.name for e in listed(show, workspace=True)) == "workspace"
    edited = copy.deepcopy(show)
    experiments(edited)["seed7"]["data"]["metrics"][GATES]["data"] = {"skipped": "prepared prompts lack ..."}
    sweep = sweep_frame(found(edited))
    assert "seed7" not in set(sweep.frame["name"])
    assert sweep.left_out["seed7"] == "gates skipped: prepared prompts lack ..."
    for bad in ({"rev": "workspace"}, [{"no": "rev"}], "text"):
        with pytest.raises(ValueError, match="dvc exp show --json"):
            listed(bad)


def test_command_writes_the_three_formats_and_prints_the_markdown(show, project, tmp_path, capsys):
    assert xurs(["gates-sweep", "--from", "show.json", "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    md = (tmp_path / "gates_sweep.md").read_text()
    assert out == md
    assert "| seed17 | 0.01 | 17 | 1.0000 |" in md
    assert "left out queued23: experiment queued" in err
    assert f"left out master: {GATES} not found (its stage did not run" in err
    assert r"\newcommand{\GatesSweepRows}" in (tmp_path / "gates_sweep.tex").read_text()
    csv = pd.read_csv(tmp_path / "gates_sweep.csv").set_index("name")
    states = experiments(show)
    for name in ("lr05", "seed17", "seed7"):
        for key, value in expected_row(states[name], "dev").items():
            assert csv.loc[name, key] == value, (name, key)
    assert xurs(["gates-sweep", "--from", "show.json", "--split", "train", "--out", str(tmp_path)]) == 2
    assert "no experiment has 'train' gate metrics" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "expected"), [([], []), (["-A"], ["-A"]), (["--all-commits"], ["-A"])])
def test_all_commits_asks_dvc_for_every_commits_experiments(project, tmp_path, monkeypatch, flags, expected):
    """After a commit, `dvc exp show` lists only experiments based on the new HEAD; -A asks for all."""
    import subprocess

    calls, real = [], subprocess.run

    def fake_run(command, **kwargs):
        if command[0] == "git":
            return real(command, **kwargs)
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=(project / "show.json").read_text(), stderr="")

    monkeypatch.setattr("xurs_pipeline.experiments.show.subprocess.run", fake_run)
    assert xurs(["gates-sweep", *flags, "--out", str(tmp_path)]) == 0
    assert calls[0][1:] == ["exp", "show", "--json", *expected]
    assert "| seed17 |" in (tmp_path / "gates_sweep.md").read_text()


def test_a_second_sweep_goes_to_a_new_file_unless_overwrite(project, capsys):
    """Issue 19: the default run never replaces an earlier (committed) sweep table."""
    out = project / "out"
    assert xurs(["gates-sweep", "--from", "show.json", "--out", str(out)]) == 0
    (out / "gates_sweep.md").write_text("committed sweep\n")
    assert xurs(["gates-sweep", "--from", "show.json", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert (out / "gates_sweep.md").read_text() == "committed sweep\n"
    assert "| seed17 |" in (out / "gates_sweep_2.md").read_text()
    assert f"wrote {out / 'gates_sweep_2.md'}" in err
    assert {p.name for p in out.iterdir()} == {
        f"gates_sweep{n}.{s}" for n in ("", "_2") for s in ("md", "tex", "csv")
    }
    assert xurs(["gates-sweep", "--from", "show.json", "--out", str(out), "--overwrite"]) == 0
    assert "| seed17 |" in (out / "gates_sweep.md").read_text()
    assert not (out / "gates_sweep_3.md").exists()


def test_missing_files_are_named_in_words_not_errno(project, tmp_path, capsys):
    """A commit whose gates never ran, and a --from file that does not exist: no raw ``[Errno 2]``."""
    assert xurs(["gates-sweep", "--from", "show.json", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert (
        f"left out master: {GATES} not found (its stage did not run in this experiment, or the run "
        "failed before it)" in err
    )
    missing = tmp_path / "nope.json"
    assert xurs(["gates-sweep", "--from", str(missing), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--from {missing}: not found; save one with `dvc exp show --json > FILE`" in err
    assert "Errno" not in err


@pytest.mark.parametrize("command", ["gates-sweep", "swap-sweep"])
def test_a_from_file_that_is_not_utf8_is_named(tmp_path, capsys, command):
    """A --from file of other bytes (UTF-16, a binary) gave Python's codec message, naming no file."""
    bad = tmp_path / "show.json"
    bad.write_bytes("[]".encode("utf-16"))
    assert xurs([command, "--from", str(bad), "--out", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"--from {bad}: not UTF-8 text (byte b'\\xff' at offset 0)" in line


def test_experiments_of_another_clone_are_named_not_read(project, tmp_path, monkeypatch, capsys):
    """A --from file whose commits this repository lacks: each experiment is left out, saying so."""
    new_repo(tmp_path / "other").commit({"paths": PATHS, "experiment_name": "other"}, (), {})
    monkeypatch.chdir(tmp_path / "other")
    assert xurs(["gates-sweep", "--from", str(project / "show.json"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    for name in ("master", "lr05", "seed17", "seed7"):
        (line,) = [e for e in err if e.startswith(f"left out {name}: ")]
        assert line.endswith("is not in the repository here (a --from file of another clone?)"), line
    assert "no experiment has 'dev' gate metrics" in err[-1]
