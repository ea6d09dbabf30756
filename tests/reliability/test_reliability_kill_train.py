"""SIGKILL the ``train`` stage at several points; rerunning finishes with the uninterrupted result.

One chain of runs on a copy of the reference project (same backbone and prompts), each rerun with
``train.resume=true``:
1. killed right after the state of epoch 0 was saved;
2. killed while the state of epoch 1 is being written (the saved state must still be epoch 0's);
3. killed while the trained classifier is being written (no classifier may appear);
4. run to the end: the head weights equal the reference's bit for bit, and so does the history.
A run without ``train.resume`` after a kill ends the same way (it starts over, deterministically).
"""

from __future__ import annotations

from pathlib import Path

from reliability_proc import Hook, killed_at, run_ok
from reliability_project import assert_same_training, copy_project

from xurs_pipeline.io import read_json

RESUME = "train.resume=true"


def _state(project: Path) -> Path:
    """The one state directory (``train.state_dir/<run hash>``) of the project."""
    (state,) = [
        p for p in (project / ".cache" / "xurs" / "train_state").iterdir() if not p.name.startswith(".")
    ]
    return state


def test_train_survives_kills_at_several_points(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "project", "backbone", "prepare")
    out, expected = project / "data" / "train", reference / "data" / "train"

    killed_at(project, "train", Hook("xurs_pipeline.train.loop:save_state", path_arg=0))
    assert read_json(_state(project) / "progress.json")["epoch"] == 0
    assert not out.exists()

    killed_at(project, "train", Hook("xurs_pipeline.train.state:save_file", match="trainable"), RESUME)
    assert read_json(_state(project) / "progress.json")["epoch"] == 0  # epoch 1's state never swapped in
    assert not out.exists()

    killed_at(project, "train", Hook("xurs_pipeline.models.checkpoint:save_file", match="head"), RESUME)
    assert read_json(_state(project) / "progress.json")["epoch"] == 2
    assert not (out / "classifier").exists()  # only its temporary directory, under another name
    assert not (out / "train_metrics.json").exists()

    log = run_ok(project, "train", RESUME)
    assert "resumed from" in log
    assert read_json(out / "train_metrics.json")["resumed_from_epoch"] == 2
    assert_same_training(out, expected)

    run_ok(project, "train")  # no resume: starts over from the same seed
    assert read_json(out / "train_metrics.json")["resumed_from_epoch"] is None
    assert_same_training(out, expected)
