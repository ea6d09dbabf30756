"""Session fixture of the paper-architecture tests: tiny random SmolLM3 and Llama-2 models saved as local
model directories, built once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # paper_helpers

from xurs_pipeline.models.tiny import save_tiny_paper_model
from xurs_pipeline.models.tiny_paper import PAPER_MODEL_LAYERS

# Four layers give SmolLM3 its NoPE layer (every fourth layer has no rotary embedding).


@pytest.fixture(scope="session")
def paper_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """{"smollm3": dir, "llama": dir}: tiny random models of the paper's architectures with a tokenizer."""
    root = tmp_path_factory.mktemp("paper_models")
    return {
        arch: save_tiny_paper_model(root / arch, arch, num_layers=layers)
        for arch, layers in PAPER_MODEL_LAYERS.items()
    }
