"""The tests' fresh clone (tests/user_clone.py): a checkout's uncommitted code goes in, its run record
does not."""

from __future__ import annotations

from pathlib import Path

from smoke_project import run_ok
from user_clone import RUN_RECORD, git_clone


def _git(cwd: Path, *args: str) -> str:
    """``git args`` in ``cwd`` through the tests' command runner; its standard output."""
    return run_ok(["git", *args], cwd).stdout


def _source(root: Path) -> Path:
    """A repository with a code file and a ``dvc.lock`` committed, both then edited in its working tree, as
    a developer's change and README command 1's ``dvc repro`` leave them."""
    source = root / "source"
    source.mkdir()
    _git(source, "init", "-q")
    _git(source, "config", "user.name", "dev")
    _git(source, "config", "user.email", "dev@example.org")
    (source / "code.py").write_text("VALUE = 1\n")
    (source / RUN_RECORD).write_text("stages: {}\n")
    _git(source, "add", "code.py", RUN_RECORD)
    _git(source, "commit", "-qm", "start")
    (source / "code.py").write_text("VALUE = 2\n")
    (source / RUN_RECORD).write_text("stages: {plots: {outs: [{path: results/plots, md5: only-here.dir}]}}\n")
    return source


def test_the_clone_takes_edited_code_and_keeps_the_committed_run_record(tmp_path: Path) -> None:
    work = git_clone(tmp_path / "work", _source(tmp_path))
    assert (work / "code.py").read_text() == "VALUE = 2\n"
    assert (work / RUN_RECORD).read_text() == "stages: {}\n"
    # the edit is committed in the clone, and nothing else is left changed
    assert _git(work, "status", "--short") == ""
