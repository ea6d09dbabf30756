"""Helpers of the paper-architecture tests: a synthetic MedQA-format directory, scratch copies of the
project, and running this virtual environment's commands in them."""

from __future__ import annotations

from pathlib import Path

from smoke_project import BIN, ROOT, copy_sources
from smoke_project import run_ok as run

from xurs_pipeline.models.tiny_paper import MEDQA_SIZES, write_medqa

__all__ = ["BIN", "ROOT", "run", "scratch_project", "write_medqa"]


def scratch_project(work: Path) -> Path:
    """A copy of the project (conf, stages, library, dvc.yaml) with a synthetic MedQA directory."""
    copy_sources(work)
    write_medqa(work / "medqa", MEDQA_SIZES)
    return work
