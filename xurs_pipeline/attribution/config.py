"""Config schema of the ``attribution`` section."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AttributionConfig:
    seed: int = 11
