"""Config schema of the ``train`` section."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    seed: int = 7
