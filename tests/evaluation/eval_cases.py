"""Small analytic models and builders shared by the evaluation tests."""

from __future__ import annotations

import numpy as np
import torch

from xurs_pipeline.credal import FOCAL_INDEX, N_MASSES


def masses_from(sets: dict[tuple[int, ...], float]) -> list[float]:
    """A 15-vector of masses from {focal set: mass} (unlisted sets get zero)."""
    out = [0.0] * N_MASSES
    for subset, value in sets.items():
        out[FOCAL_INDEX[subset]] = value
    return out


class LinearWidthModel:
    """Analytic mass function: s = sum_i w_i * Z[i, 0]; m({A}) = 1 - s, m(Θ) = s, so W_A = s.

    Zeroing token i's embedding changes W_A by exactly w_i * Z[i, 0]. Records every call's mask and
    positions so tests can check that masking leaves them unchanged.
    """

    def __init__(self, weights: np.ndarray) -> None:
        self.w = torch.as_tensor(weights, dtype=torch.float64)
        self.calls: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def __call__(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor):
        self.calls.append((inputs_embeds.clone(), attention_mask.clone(), position_ids.clone()))
        s = (inputs_embeds[..., 0].double() * self.w).sum(-1)  # (batch,)
        masses = torch.zeros(inputs_embeds.shape[0], N_MASSES, dtype=torch.float64)
        masses[:, FOCAL_INDEX[(0,)]] = 1 - s
        masses[:, FOCAL_INDEX[(0, 1, 2, 3)]] = s
        return masses


def linear_question_embeds(values: np.ndarray, hidden: int = 3) -> torch.Tensor:
    """(seq, hidden) embeddings with column 0 = values and other columns ones."""
    e = torch.ones(len(values), hidden, dtype=torch.float64)
    e[:, 0] = torch.as_tensor(values, dtype=torch.float64)
    return e
