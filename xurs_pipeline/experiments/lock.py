"""Which stages an experiment ran under its own params, from its ``dvc.lock``.

An experiment's commit holds the ``dvc.lock`` of its run. A stage the run did not reach (``xurs sweep
--stage check``, ``dvc exp run gates``, a failed stage) keeps the entry of the commit it was based on, so
DVC serves the baseline's output for it at the experiment's revision. A stage's entry counts as this
experiment's when

- every param it records equals the experiment's (``params.yaml`` keys, dotted; a whole-file entry
  compares every key), and
- each of its deps that another stage writes has the hash that stage's entry records for its output, and
  that stage's entry counts as this experiment's too (so a stage after one that did not run did not run,
  and the first one says why), but for :data:`STAMPS`, whose output is the same under any params.

This is what ``dvc status`` would find unchanged in the experiment's params and pipeline outputs; code
deps are the commit's own (an experiment commit carries the code it ran).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from xurs_pipeline.experiments.show import WORKSPACE, flatten

LOCK = "dvc.lock"
# stages whose output is a constant stamp (``check``: ``check.json``, contracts' ``config_check``): a rerun
# under other params writes the same file, so only its recorded hash matters to the stages after it
STAMPS = ("check",)


def read_lock(rev: str, cwd: str | Path = ".") -> dict[str, Any]:
    """The ``stages`` of ``dvc.lock`` at commit ``rev`` (the file in ``cwd`` for the workspace; none where
    no stage ran); ValueError when ``rev`` is no commit of the repository in ``cwd`` or the lock no YAML."""
    if rev == WORKSPACE:
        path = Path(cwd) / LOCK
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    else:
        if _git(cwd, "cat-file", "-e", f"{rev}^{{commit}}").returncode != 0:
            raise ValueError(
                f"commit {rev[:7]} is not in the repository here (a --from file of another clone?)"
            )
        shown = _git(cwd, "show", f"{rev}:{LOCK}")
        text = shown.stdout if shown.returncode == 0 else ""  # no dvc.lock: no stage ran
    try:
        lock = load_yaml(text) or {}
    except YAMLError as err:
        raise ValueError(f"{LOCK} at {rev[:7]}: not YAML ({str(err).splitlines()[0]})") from None
    stages = lock.get("stages") if isinstance(lock, Mapping) else None
    return dict(stages) if isinstance(stages, Mapping) else {}


def load_yaml(text: str) -> Any:
    """YAML as DVC reads it (YAML 1.2, ruamel): ``1e-06`` is a number, as in the params DVC shows and
    records, where PyYAML (YAML 1.1) would read text."""
    return YAML(typ="safe").load(text)


def _git(cwd: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def writer(lock: Mapping[str, Any], path: str) -> str | None:
    """The stage whose recorded output is ``path`` or a directory holding it (None: no stage of the lock)."""
    best, length = None, -1
    for stage, entry in lock.items():
        for out in _entries(entry, "outs"):
            out_path = str(out.get("path", "")).rstrip("/")
            if (path == out_path or path.startswith(f"{out_path}/")) and len(out_path) > length:
                best, length = stage, len(out_path)
    return best


def not_run(lock: Mapping[str, Any], params: Mapping[str, Any], stage: str) -> str:
    """Why ``stage``'s entry in ``lock`` is not from a run under ``params`` (dotted keys); ``""`` if it is."""
    return _Check(lock, params).why(stage)


class _Check:
    """:func:`not_run` over one lock, each stage decided once."""

    def __init__(self, lock: Mapping[str, Any], params: Mapping[str, Any]) -> None:
        self.lock, self.params, self.decided = lock, params, {}  # type: ignore[var-annotated]
        self.outs = {
            str(out.get("path")): (stage, _hash(out))
            for stage, e in lock.items()
            for out in _entries(e, "outs")
        }

    def why(self, stage: str) -> str:
        if stage not in self.decided:
            self.decided[stage] = "?"  # a cycle (never in a DVC lock) reads as not run
            self.decided[stage] = self._decide(stage)
        return self.decided[stage]

    def _decide(self, stage: str) -> str:
        entry = self.lock.get(stage)
        if not isinstance(entry, Mapping):
            return f"stage {stage} never ran"
        recorded = flatten((entry.get("params") or {}).get("params.yaml") or {})
        for key, value in recorded.items():
            if key not in self.params:
                return f"stage {stage} ran with {key}={_text(value)}, a key these params lack"
            if _text(self.params[key]) != _text(value):
                return f"stage {stage} ran with {key}={_text(value)}, not {key}={_text(self.params[key])}"
        for dep in _entries(entry, "deps"):
            upstream = self.outs.get(str(dep.get("path")))
            if upstream is None:
                continue
            name, made = upstream
            if name not in STAMPS and self.why(name):  # the first stage that did not run says why
                return self.why(name)
            if _hash(dep) != made:
                return f"stage {stage} ran on another {dep.get('path')} than stage {name} made in it"
        return ""


def _entries(entry: Any, key: str) -> list[Mapping[str, Any]]:
    items = entry.get(key) if isinstance(entry, Mapping) else None
    return [i for i in items or [] if isinstance(i, Mapping)]


def _hash(item: Mapping[str, Any]) -> str:
    return str(item.get("md5") or item.get("etag") or item.get("checksum") or "")


def _text(value: Any) -> str:
    """A param value as one comparable text (``1`` and ``1.0`` stay different, as in YAML)."""
    return json.dumps(value, sort_keys=True, default=str)
