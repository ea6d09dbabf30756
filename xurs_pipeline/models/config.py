"""Config schema of the ``model`` section (backbone, head, adaptation)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ModelConfig:
    backbone: str = "tiny"  # tiny | hf | gguf
