"""``dvc exp show --json`` (DVC 3.x), read once for every cross-experiment command.

Input: a list with one entry per baseline commit and one for the workspace
(``dvc.repo.experiments.serialize.ExpState``)::

    [{"rev": "workspace" | <sha>, "name": <branch> | None, "error": {"msg", "type"} | None,
      "data": {"params": {<file>: {"data": {...}}}, "metrics": {<file>: {"data": {...}} | {"error": ...}},
               "timestamp", "deps", "outs", "meta"},
      "experiments": [{"name", "executor": {"state": "queued" | "running" | "failed" | "success"} | None,
                       "revs": [<ExpState of the experiment>]}] | None}]

Output: one :class:`Experiment` per baseline commit (the workspace only when asked) and per experiment.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xurs_pipeline.errors import XursError

WORKSPACE = "workspace"
# DVC's executor states of an experiment that has no results of its own (a Ctrl-C'd `dvc exp run` can stay
# "running" in `dvc exp show` for good: its executor never reported back)
UNFINISHED = {
    "queued": "experiment queued, not run yet",
    "running": "experiment running, or interrupted while running (DVC still lists it as running)",
    "failed": "experiment failed",
}


@dataclass(frozen=True)
class Experiment:
    """One experiment (or baseline commit, or the workspace) of ``dvc exp show --json``.

    rev: the commit (``"workspace"`` for the workspace); params: dotted keys of ``params.yaml`` (other
    params files as ``<file>:key``, as DVC names them); state: DVC's executor state (``""`` for a commit or
    the workspace, ``"success"`` or None-like for a finished experiment); error: DVC's error, in words."""

    name: str
    rev: str
    params: dict[str, Any]
    state: str = ""
    error: str = ""

    @property
    def unfinished(self) -> str:
        """Why the experiment has no results of its own to show (``""`` when it finished)."""
        if self.state in UNFINISHED:
            return UNFINISHED[self.state]
        if self.state not in ("", "success"):
            return f"experiment {self.state}"
        return f"dvc: {self.error}" if self.error else ""


def experiments(show: Any, workspace: bool = False) -> list[Experiment]:
    """Every baseline commit and experiment of ``show`` (the workspace too with ``workspace``); ValueError
    when ``show`` is not ``dvc exp show --json`` output."""
    if not isinstance(show, Sequence) or not all(isinstance(s, Mapping) and "rev" in s for s in show):
        raise ValueError("not `dvc exp show --json` output: expected a list of objects with a 'rev' key")
    found = []
    for baseline in show:
        if baseline["rev"] != WORKSPACE:
            found.append(_experiment(str(baseline.get("name") or str(baseline["rev"])[:7]), baseline, ""))
        elif workspace:
            found.append(_experiment(WORKSPACE, baseline, ""))
        for exp_range in _objects(baseline.get("experiments"), "experiments"):
            executor = _objects([exp_range.get("executor")], "executor")
            for state in _objects(exp_range.get("revs"), "revs"):
                name = state.get("name") or exp_range.get("name") or str(state.get("rev"))[:7]
                found.append(_experiment(str(name), state, str(executor[0].get("state") or "")))
    return found


def _objects(value: Any, key: str) -> list[Mapping[str, Any]]:
    """``value``, a list of objects (None: none); ValueError naming ``key`` for anything else."""
    items = [] if value is None else value
    if not isinstance(items, list) or not all(i is None or isinstance(i, Mapping) for i in items):
        raise ValueError(f"not `dvc exp show --json` output: {key!r} is not a list of objects")
    return [i or {} for i in items]


def _experiment(name: str, state: Mapping[str, Any], executor: str) -> Experiment:
    error = state.get("error")
    return Experiment(
        name, str(state.get("rev")), params(state), executor, readable_error(error, name) if error else ""
    )


def params(state: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted param keys of one state's params files (``params.yaml`` keys bare, others ``<file>:key``)."""
    data = state.get("data") or {}
    files = data.get("params") if isinstance(data, Mapping) else None
    if not isinstance(files or {}, Mapping) or not all(
        isinstance(r, Mapping) for r in (files or {}).values()
    ):
        raise ValueError("not `dvc exp show --json` output: 'params' is not an object of objects")
    out: dict[str, Any] = {}
    for path, result in (files or {}).items():
        values = result.get("data") or {}
        if not isinstance(values, Mapping):
            raise ValueError(f"not `dvc exp show --json` output: the params of {path} are not an object")
        out.update(flatten(values, "" if path == "params.yaml" else f"{path}:"))
    return out


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested params -> dotted keys (``{'data': {'seed': 6}}`` -> ``{'data.seed': 6}``)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def readable_error(error: Any, path: str) -> str:
    """DVC's error record of a file or experiment as a sentence, not raw errno text."""
    msg = str(error.get("msg", error) if isinstance(error, Mapping) else error)
    if "Errno 2]" in msg or "No such file" in msg:
        return f"{path} not found (its stage did not run in this experiment, or the run failed before it)"
    return re.sub(r"^\[Errno \d+\]\s*", "", msg) or "unreadable"


def exp_show_json(cwd: str | Path = ".", all_commits: bool = False) -> list[dict[str, Any]]:
    """``dvc exp show --json`` (``-A`` with ``all_commits``) in ``cwd``, parsed."""
    dvc = shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")
    command = [dvc, "exp", "show", "--json", *(["-A"] if all_commits else [])]
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as err:
        raise XursError(f"could not run `dvc exp show --json` ({err}); is DVC installed?") from err
    if result.returncode != 0:
        raise XursError(f"`dvc exp show --json` failed (exit {result.returncode}): {result.stderr[-2000:]}")
    return parse_json(result.stdout, "`dvc exp show --json` output")


def read_saved(source: str) -> Any:
    """A saved ``dvc exp show --json`` file, with a message naming it instead of errno text."""
    path = Path(source)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "not found"
        raise ValueError(f"--from {source}: {what}; save one with `dvc exp show --json > FILE`")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"--from {source}: not UTF-8 text (byte {err.object[err.start : err.start + 1]!r} at offset "
            f"{err.start}); save it with `dvc exp show --json > FILE`"
        ) from None
    return parse_json(text, f"--from {source}")


def shown(source: str | None, all_commits: bool, workspace: bool = False) -> list[Experiment]:
    """The experiments of a saved ``--from`` file, or of ``dvc exp show --json`` run here."""
    show = read_saved(source) if source else exp_show_json(all_commits=all_commits)
    where = f"--from {source}" if source else "`dvc exp show --json` output"
    try:
        return experiments(show, workspace)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` with a message naming ``where``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err})") from err
