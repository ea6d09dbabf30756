"""Helpers of the paper-architecture tests: a synthetic MedQA-format directory, scratch copies of the
project, and running this virtual environment's commands in them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
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


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a command of this virtual environment in ``cwd``; fail the test with its output otherwise."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(cwd)}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, (
        f"{' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


def scratch_project(work: Path) -> Path:
    """A copy of the project (conf, stages, library, dvc.yaml) with a synthetic MedQA directory."""
    for name in ("conf", "stages", "xurs_pipeline"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", work / "dvc.yaml")
    write_medqa(work / "medqa", {"train": 32, "dev": 4, "test": 4})
    return work
