"""Helpers of the paper-architecture tests: a synthetic MedQA-format directory, scratch copies of the
project, and running this virtual environment's commands in them."""

from __future__ import annotations

import json
from pathlib import Path

from smoke_project import BIN, ROOT, copy_sources
from smoke_project import run_ok as run

__all__ = ["BIN", "ROOT", "run", "scratch_project", "write_medqa"]

MEDQA_FILES = Path("US/4_options")


def write_medqa(directory: Path, sizes: dict[str, int]) -> Path:
    """Synthetic questions in MedQA's jsonl format (question, options A-D, answer_idx), one file per split
    named as jind11/MedQA names them; returns ``directory``."""
    files = directory / MEDQA_FILES
    files.mkdir(parents=True)
    for split, n in sizes.items():
        rows = [
            {"question": f"A {split} patient {i} has had fever for {i + 2} days and a rash on the arms. "
                         "Which of the following is the most likely diagnosis?",
             "options": {k: f"{k} disease {i}" for k in "ABCD"}, "answer_idx": "ABCD"[i % 4]}
            for i in range(n)
        ]  # fmt: skip
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (files / f"phrases_no_exclude_{split}.jsonl").write_text(text)
    return directory


def scratch_project(work: Path) -> Path:
    """A copy of the project (conf, stages, library, dvc.yaml) with a synthetic MedQA directory."""
    copy_sources(work)
    write_medqa(work / "medqa", {"train": 32, "dev": 4, "test": 4})
    return work
