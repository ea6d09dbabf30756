"""The one ``smoke`` project of the test session: the whole pipeline through ``dvc repro`` once.

Shared (session scope, ``tests/conftest.py``) by the pipeline tests (``tests/pipeline``: artifacts, table
cells, ``dvc status`` invalidation, ``xurs explain``) and the sweep test, which starts from a copy of its
DVC cache so that each sweep point reruns only the stages its override (or an uncacheable output) touches.
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


def _outputs(project: Path) -> dict[str, bool]:
    """Every stage output (``contracts.py``) as a path under ``project``'s params, and whether DVC caches it
    (``out``) or git keeps it (metric and detail files)."""
    paths = yaml.safe_load((project / "params.yaml").read_text())["paths"]
    return {str(a.at(paths)): a.kind == "out" for stage in STAGES.values() for a in stage.writes}


def commit_baseline(project: Path, work: Path, data: tuple[str, ...] = ()) -> str:
    """``work`` as a git repository whose first commit is ``project``'s finished run, as in a project whose
    pipeline has run: its sources and params, its ``dvc.lock``, its git-kept (``cache: false``) outputs and
    its DVC cache (cached outputs checked out, git-ignored), and the input folders ``data``. A sweep from it
    reruns only what its overrides touch. Returns ``dvc status``'s report of the baseline."""
    copy_sources(work, project)
    for name in data:
        shutil.copytree(project / name, work / name)
    dvc = str(BIN / "dvc")
    for args in (["git", "init", "-q"], [dvc, "init", "-q"], [dvc, "config", "hydra.enabled", "True"]):
        run_ok(args, work)
    for name in ("params.yaml", "dvc.lock"):
        shutil.copy(project / name, work / name)
    shutil.copytree(project / ".dvc" / "cache", work / ".dvc" / "cache")
    outputs = _outputs(work)
    for out, cached in outputs.items():
        if not cached and (project / out).exists():  # committed to git
            (work / out).parent.mkdir(parents=True, exist_ok=True)
            copy = shutil.copytree if (project / out).is_dir() else shutil.copy
            copy(project / out, work / out)
    ignored = "".join(f"/{out}\n" for out, cached in outputs.items() if cached)
    (work / ".gitignore").write_text("logs/\n" + ignored)
    ran = list(yaml.safe_load((work / "dvc.lock").read_text())["stages"])
    run_ok([dvc, "checkout", "-q", *ran], work)  # the cached outputs of the stages that ran
    status = run_ok([dvc, "status"], work).stdout
    run_ok(["git", "add", "-A"], work)
    run_ok(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "baseline"], work)
    return status
