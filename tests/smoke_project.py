"""The one ``smoke`` project of the test session: the whole pipeline through ``dvc repro`` once.

Shared (session scope, ``tests/conftest.py``) by the pipeline tests (``tests/pipeline``: artifacts, table
cells, ``dvc status`` invalidation, ``xurs explain``, the report in a browser).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROJECT_FILES = ("conf", "stages", "xurs_pipeline")


def run_any(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a project command (``dvc``, ``xurs``, ``git``) in ``cwd`` as a user would, whatever its exit
    status. The stages it starts use the test process's torch thread count (``worker_threads`` in
    tests/conftest.py), so their outputs equal an in-process run's bit for bit."""
    import torch

    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(cwd),
        "OMP_NUM_THREADS": str(torch.get_num_threads()),
    }
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def run_ok(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """:func:`run_any`, failing the test with the command's output unless it exits with status 0."""
    result = run_any(args, cwd)
    assert result.returncode == 0, (
        f"{' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


def dvc_status(project: Path) -> dict[str, list]:
    """``dvc status --json`` in ``project``: stage name -> what changed."""
    return json.loads(run_ok([str(BIN / "dvc"), "status", "--json"], project).stdout)


def changed_deps(entries: list) -> set[str]:
    """The dependency paths one stage's ``dvc status --json`` entries name as changed."""
    return {path for e in entries if isinstance(e, dict) for path in e.get("changed deps", {})}


def copy_sources(work: Path, source: Path = ROOT) -> Path:
    """``work`` holding the code, configs and generated ``dvc.yaml`` of ``source`` (no artifacts)."""
    for name in PROJECT_FILES:
        shutil.copytree(source / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(source / "dvc.yaml", work / "dvc.yaml")
    return work


def build_smoke_project(work: Path) -> Path:
    """The smoke experiment reproduced by DVC in ``work`` (no git: ``dvc init --no-scm``)."""
    copy_sources(work)
    run_ok([str(BIN / "dvc"), "init", "--no-scm", "-q"], work)
    run_ok([str(BIN / "xurs"), "params", "experiment=smoke"], work)
    run_ok([str(BIN / "dvc"), "repro"], work)
    return work
