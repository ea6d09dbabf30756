"""Reading one file of a DVC experiment: the workspace's copy, or the experiment's revision through DVC."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def experiment_json(state: dict[str, Any], path: str, cwd: str | Path = ".") -> tuple[Any, str]:
    """The JSON file ``path`` (relative to the project) of one ``dvc exp show --json`` state: the workspace's
    file, or the experiment's revision read through DVC (``dvc.api``: the hash its ``dvc.lock`` records,
    from the DVC cache; a git-tracked file from the commit). Returns (parsed JSON or None, ``path`` or why
    it is missing)."""
    import dvc.api
    from dvc.exceptions import DvcException, PathMissingError

    missing = f"{path} not found (its stage did not run in this experiment, or the run failed before it)"
    rev = state.get("rev")
    if rev == "workspace":
        file = Path(cwd) / path
        if not file.is_file():
            return None, missing
        return parse_json(file.read_text(encoding="utf-8"), str(file)), path
    collected = (
        f"{path}: in the experiment's dvc.lock but not in the DVC cache (removed by `dvc gc`?): "
        "`dvc exp pull` it from a remote, or rerun the experiment"
    )
    try:
        text = dvc.api.read(path, repo=str(cwd), rev=rev, encoding="utf-8")
    except PathMissingError:  # not readable at that revision: never made, or its cache entry collected
        return None, collected if path in locked_outs(cwd, str(rev)) else missing
    except FileNotFoundError:  # in dvc.lock, but its cache entry is gone (a `dvc gc`, an interrupted run)
        return None, collected
    except DvcException as err:
        return None, f"{path}: {err}"
    return parse_json(text, f"{str(rev)[:7]}:{path}"), path


def locked_outs(cwd: str | Path, rev: str) -> set[str]:
    """The output paths the ``dvc.lock`` of revision ``rev`` records (git-tracked, read from the commit);
    empty when it has none."""
    import dvc.api
    import yaml
    from dvc.exceptions import DvcException

    try:
        lock = yaml.safe_load(dvc.api.read("dvc.lock", repo=str(cwd), rev=rev, encoding="utf-8")) or {}
    except (DvcException, OSError, yaml.YAMLError):
        return set()
    stages = lock.get("stages") or {} if isinstance(lock, dict) else {}
    return {str(o.get("path")) for s in stages.values() if isinstance(s, dict) for o in s.get("outs") or []}


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` with a message naming ``where``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err})") from err
