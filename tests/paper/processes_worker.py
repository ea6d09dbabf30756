"""Run stage tasks in several projects, one after another, in this process: the body of the multi-process
tests, started by ``torchrun --nproc_per_node 2 processes_worker.py <project> <stage>... [-- <project> ...]``
(or called in the test's own process, a group of one).

Each project is a directory with a composed ``params.yaml`` and the artifacts its first stage reads. Every
stage runs through ``run_task`` as ``python -m stages <name>`` runs it, so the tasks form the process group
themselves (``xurs_pipeline.processes``); backbone and prepare stay single-process (the tests copy them).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from xurs_pipeline.config import load_params
from xurs_pipeline.tasks.runner import run_task, stage_task


def run_stages(project: Path, stages: Sequence[str]) -> None:
    """Run ``stages`` (names of ``contracts.STAGES``) in ``project`` with its ``params.yaml``."""
    here = Path.cwd()
    os.chdir(project)
    try:
        cfg = load_params("params.yaml")
        for stage in stages:
            run_task(stage, stage_task(stage), cfg)
    finally:
        os.chdir(here)


def main(argv: Sequence[str]) -> None:
    runs, current = [], []
    for arg in [*argv, "--"]:
        if arg == "--":
            runs.append(current)
            current = []
        else:
            current.append(arg)
    for project, *stages in (r for r in runs if r):
        run_stages(Path(project), stages)


if __name__ == "__main__":
    main(sys.argv[1:])
