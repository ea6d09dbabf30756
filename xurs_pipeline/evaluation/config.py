"""Config schema of the ``evaluation`` section."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EvaluationConfig:
    seed: int = 0
