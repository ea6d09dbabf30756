"""The one ``smoke`` project of the test session: the whole pipeline through ``dvc repro`` once.

Shared (session scope, ``tests/conftest.py``) by the pipeline tests (``tests/pipeline``: artifacts, table
cells, ``dvc status`` invalidation, ``xurs explain``) and the sweep test, which starts from a copy of its
DVC cache so that each sweep point reruns only the stages its override touches.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from xurs_pipeline.contracts import STAGES

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROJECT_FILES = ("conf", "stages", "xurs_pipeline")


def run_ok(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a project command (``dvc``, ``xurs``, ``git``) in ``cwd``; fail the test with its output."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(cwd)}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, (
        f"{' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


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


def outputs(project: Path) -> list[str]:
    """Every stage output (``contracts.py``) as a path under ``project``'s params."""
    paths = yaml.safe_load((project / "params.yaml").read_text())["paths"]
    return [str(a.at(paths)) for stage in STAGES.values() for a in stage.writes]


def commit_baseline(project: Path, work: Path, data: tuple[str, ...] = ()) -> str:
    """``work`` as a git repository whose first commit is ``project``'s finished run, as a user commits it
    after ``dvc repro``: its sources and params, its ``dvc.lock`` and the input folders ``data`` in git, with
    this project's own ignore rules (all of ``data/`` ignored), and every output in the DVC cache, checked
    out and git-ignored (nothing force-added). A sweep from it reruns only what its overrides touch.
    Returns ``dvc status``'s report of the baseline."""
    copy_sources(work, project)
    for name in data:
        shutil.copytree(project / name, work / name)
    dvc = str(BIN / "dvc")
    for args in (["git", "init", "-q"], [dvc, "init", "-q"], [dvc, "config", "hydra.enabled", "True"]):
        run_ok(args, work)
    for name in ("params.yaml", "dvc.lock"):
        shutil.copy(project / name, work / name)
    for name in (".gitignore", "data/.gitignore"):  # the project's own rules, as a clone has them
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, work / name)
    shutil.copytree(project / ".dvc" / "cache", work / ".dvc" / "cache")
    ran = list(yaml.safe_load((work / "dvc.lock").read_text())["stages"])
    run_ok([dvc, "checkout", "-q", *ran], work)  # every output of the stages that ran, from the DVC cache
    run_ok([dvc, "commit", "-f", "-q", *ran], work)  # as `dvc repro` leaves them: git-ignored
    status = run_ok([dvc, "status"], work).stdout
    run_ok(["git", "add", "-A"], work)
    run_ok(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "baseline"], work)
    tracked = run_ok(["git", "ls-files"], work).stdout.split()
    in_git = [f for f in tracked for out in outputs(work) if f == out or f.startswith(f"{out}/")]
    assert in_git == [], in_git  # git holds no output: DVC's cache does
    return status
