"""The paper's MedQA experiments shrunk to tiny models of their architectures: what CI runs
(``tests/paper/``) and ``bench/bench_gpu.py`` runs under CUDA. Only sizes differ from ``paper_smollm3`` and
``paper_llama2``; the questions are synthetic MedQA-format files (:func:`write_medqa`)."""

from __future__ import annotations

import json
from pathlib import Path

# Blocks of each tiny paper model (``models.tiny.save_tiny_paper_model``), by architecture.
PAPER_MODEL_LAYERS = {"smollm3": 4, "llama": 2}
ARCHITECTURE = {"paper_smollm3": "smollm3", "paper_llama2": "llama"}
SIZES = [
    "data.medqa_path=medqa",
    "train.max_epochs=1",
    "train.head_first_epochs=2",
    "attribution.max_questions=2",
    "attribution.refs_per_collection=4",
    "evaluation.bootstrap_resamples=200",
    "evaluation.n_random=4",
    "evaluation.randomisation_questions=0",
]
SAMPLES = {"paper_smollm3": "attribution.n_samples=8", "paper_llama2": "attribution.n_samples=4"}
MEDQA_FILES = Path("US/4_options")
MEDQA_SIZES = {"train": 32, "dev": 4, "test": 4}


def sized_overrides(experiment: str, model_dir: Path) -> list[str]:
    """``experiment`` (a paper experiment) on the tiny model saved in ``model_dir``, at the sizes above."""
    return [f"experiment={experiment}", f"model.source={model_dir}", *SIZES, SAMPLES[experiment]]


def write_medqa(directory: Path, sizes: dict[str, int]) -> Path:
    """Synthetic questions in MedQA's jsonl format (question, options A-D, answer_idx), one file per split
    named as jind11/MedQA names them; returns ``directory``."""
    files = directory / MEDQA_FILES
    files.mkdir(parents=True)
    for split, n in sizes.items():
        (files / f"phrases_no_exclude_{split}.jsonl").write_text(medqa_lines(split, n))
    return directory


def medqa_lines(split: str, n: int) -> str:
    """``n`` synthetic questions of ``split`` as MedQA jsonl lines (question, options A-D, answer_idx)."""
    rows = [
        {
            "question": f"A {split} patient {i} has had fever for {i + 2} days and a rash on the arms. "
            "Which of the following is the most likely diagnosis?",
            "options": {k: f"{k} disease {i}" for k in "ABCD"},
            "answer_idx": "ABCD"[i % 4],
        }
        for i in range(n)
    ]
    return "".join(json.dumps(row) + "\n" for row in rows)
