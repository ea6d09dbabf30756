"""A user's fresh clone of this project: what ``git clone`` gives (the tracked files, nothing force-added),
with the working tree's edits to tracked files on top so that uncommitted changes are tested too.

Commands run in it with this virtual environment's ``xurs``/``dvc`` and the clone's own code
(``smoke_project.run_ok``); ``dvc exp show --json`` is read with :func:`experiments`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from smoke_project import BIN, ROOT, run_ok

RUN_RECORD = "dvc.lock"  # what ``dvc repro`` rewrites in a checkout: a record of its runs, not of its code


def git_clone(work: Path, source: Path = ROOT) -> Path:
    """``git clone source work``, then the working tree's versions of tracked files ``source`` has changed
    (committed in the clone), and a git identity for ``dvc exp`` commits. Returns ``work``.

    ``dvc.lock`` keeps its committed version: ``dvc repro`` in ``source`` (README command 1 before the tests)
    rewrites it to name outputs that only ``source``'s DVC cache holds, which the clone's runs would try to
    check out."""
    run_ok(["git", "clone", "-q", "--no-hardlinks", str(source), str(work)], work.parent)
    edited = run_ok(["git", "diff", "--name-only", "HEAD"], source).stdout.split()
    changed = [name for name in edited if name != RUN_RECORD]
    for name in changed:
        if (source / name).exists():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, work / name)
        else:
            (work / name).unlink(missing_ok=True)
    for key, value in (("user.name", "user"), ("user.email", "user@example.org")):
        run_ok(["git", "config", key, value], work)
    if changed:
        run_ok(["git", "add", "-A", *changed], work)
        run_ok(["git", "commit", "-qm", "working tree"], work)
    return work


def exp_show(work: Path) -> list[dict[str, Any]]:
    """``dvc exp show --json`` in ``work``, parsed."""
    return json.loads(run_ok([str(BIN / "dvc"), "exp", "show", "--json"], work).stdout)


def experiments(shown: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """name -> the experiment's state (``rev``, ``data`` with params and metrics) in ``dvc exp show --json``
    output, walked directly (not through the code under test)."""
    return {
        e["name"]: e["revs"][0]
        for entry in shown
        for e in entry.get("experiments") or []
        if e.get("name") and e.get("revs")
    }
