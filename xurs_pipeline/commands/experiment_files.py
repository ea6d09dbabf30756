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
    try:
        text = dvc.api.read(path, repo=str(cwd), rev=rev, encoding="utf-8")
    except PathMissingError:  # neither a DVC output nor git-tracked at that revision
        return None, missing
    except FileNotFoundError:  # in dvc.lock, but its cache entry is gone (a `dvc gc`, an interrupted run)
        return None, f"{path}: in the experiment's dvc.lock but not in the DVC cache (`dvc exp pull` it)"
    except DvcException as err:
        return None, f"{path}: {err}"
    return parse_json(text, f"{str(rev)[:7]}:{path}"), path


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` with a message naming ``where``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err})") from err
