"""Config schema of the ``data`` section (the ``prepare`` stage)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DataConfig:
    source: str = "synthetic_v1"  # synthetic_v1 | synthetic_v2 | medqa
    max_tokens: int = 512
    seed: int = 0

    def __post_init__(self) -> None:
        allowed = ("synthetic_v1", "synthetic_v2", "medqa")
        if self.source not in allowed:
            raise ValueError(f"data.source={self.source!r}: must be one of {allowed}")
        if self.max_tokens <= 0:
            raise ValueError(f"data.max_tokens={self.max_tokens}: must be positive")
