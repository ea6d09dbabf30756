"""A git repository holding DVC experiments as DVC leaves them, built without running DVC: one commit per
experiment with its ``params.yaml``, a ``dvc.lock`` whose stages record the params each ran with and the
hashes of what it read and wrote, and those outputs as git-tracked files (``dvc.api`` serves a git-tracked
file from the commit). A stage an experiment did not run keeps another run's entry, as ``dvc exp run``
keeps the baseline's; and :func:`show_entry` gives the experiment's ``dvc exp show --json`` record.

The pipeline here is a slice of the real one: ``predict`` (reads ``train.*``, writes predictions), then
``gates`` (reads ``evaluation.gates``, predictions; writes gates.json) and ``swap`` (reads ``attribution.*``,
predictions; writes the swap study's directory).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from xurs_pipeline.experiments.show import flatten

PREDICTIONS = "data/predict/predictions.parquet"
GATES = "data/gates/gates.json"
SWAP = "data/swap/study"
STAGES = {  # stage: (params prefixes it reads, the upstream output it reads, its output)
    "predict": (("train.",), None, PREDICTIONS),
    "gates": (("evaluation.gates",), PREDICTIONS, GATES),
    "swap": (("attribution.",), PREDICTIONS, SWAP),
}


def params(seed: int = 7, method: str = "eg", **more: Any) -> dict[str, Any]:
    """A nested params.yaml of the slice: its train seed, attribution method and whatever ``more`` adds
    (``{"data": {"seed": 5}}``)."""
    tree = {
        "experiment_name": "controlled_swap",
        "paths": {"artifacts": "data", "results": "results"},
        "train": {"seed": seed, "lr_head": 0.05},
        "attribution": {"method": method, "n_samples": 8},
        "evaluation": {"gates": {"accuracy_min": 0.8}},
    }
    for section, values in more.items():
        tree[section] = {**tree.get(section, {}), **values} if isinstance(values, Mapping) else values
    return tree


def _under(files: Mapping[str, Any], out: str) -> dict[str, Any]:
    return {path: content for path, content in files.items() if path == out or path.startswith(f"{out}/")}


def _md5(value: Any) -> str:
    return hashlib.md5(json.dumps(value, sort_keys=True).encode()).hexdigest()


@dataclass
class Repo:
    """The repository at ``root``; ``lock``: the dvc.lock stages so far (each commit starts from them)."""

    root: Path
    lock: dict[str, Any] = field(default_factory=dict)

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=self.root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    def commit(self, tree: Mapping[str, Any], ran: tuple[str, ...], files: Mapping[str, Any]) -> str:
        """Commit ``tree`` as params.yaml with the stages ``ran`` run under it (the others keep the last
        commit's lock entries) and ``files`` (path -> JSON content: the outputs those stages wrote)."""
        dotted = flatten(tree)
        for stage in ran:
            prefixes, reads, writes = STAGES[stage]
            entry: dict[str, Any] = {
                "cmd": f"python -m stages.{stage}",
                "params": {"params.yaml": {k: v for k, v in dotted.items() if k.startswith(prefixes)}},
                "outs": [
                    {"path": writes, "hash": "md5", "md5": _md5([stage, dotted, _under(files, writes)])}
                ],
            }
            if reads is not None:
                made = self.lock[STAGES_BY_OUT[reads]]["outs"][0]["md5"]
                entry["deps"] = [{"path": reads, "hash": "md5", "md5": made}]
            self.lock[stage] = entry
        (self.root / "params.yaml").write_text(yaml.safe_dump(tree))
        (self.root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": self.lock}))
        for path, content in files.items():
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            (self.root / path).write_text(json.dumps(content))
        self.git("add", "-A")
        self.git("commit", "-qm", f"ran {ran}")
        return self.git("rev-parse", "HEAD")


STAGES_BY_OUT = {out: stage for stage, (_, _, out) in STAGES.items()}


def new_repo(root: Path) -> Repo:
    root.mkdir(parents=True, exist_ok=True)
    repo = Repo(root)
    repo.git("init", "-q")
    return repo


def show_entry(name: str, rev: str, tree: Mapping[str, Any], state: str | None = None) -> dict[str, Any]:
    """One experiment's range in ``dvc exp show --json`` (DVC 3.x), executor ``state`` None when finished."""
    executor = None if state is None else {"state": state, "name": "dvc-task", "local": None}
    data = {"rev": rev, "params": {"params.yaml": {"data": dict(tree)}}, "metrics": {}}
    revision = {"rev": rev, "name": name, "error": None, "data": data}
    return {"name": name, "executor": executor, "revs": [revision]}


def show(baseline: str, baseline_tree: Mapping[str, Any], *ranges: dict[str, Any]) -> list[dict[str, Any]]:
    """``dvc exp show --json`` of one baseline commit (named ``master``) and its experiments ``ranges``."""

    def data(rev: str) -> dict[str, Any]:
        return {"rev": rev, "params": {"params.yaml": {"data": dict(baseline_tree)}}, "metrics": {}}

    workspace = {
        "rev": "workspace",
        "name": None,
        "error": None,
        "experiments": None,
        "data": data("workspace"),
    }
    commit = {
        "rev": baseline,
        "name": "master",
        "error": None,
        "experiments": list(ranges),
        "data": data(baseline),
    }
    return [workspace, commit]
