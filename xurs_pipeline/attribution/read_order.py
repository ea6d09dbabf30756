"""``kronrod_stop="read"``: integrate until the order of the spans a caller reads is certain.

A study that reads only a few spans of each prompt (the swap study reads which of two cues the attribution
ranks first, by each cue's summed token magnitude, ``evaluation/swap/plan.CUE_SCORE``) needs the averaged
attribution only as precisely as that order. With groups g of read positions and the averaged K15 vector
ê (T, L, d) over the M paths:

- each group's score S_g = Σ_{i ∈ g} m_i, m_i = ||ê_i|| (``attribution.reduction``: the l2 norm over the
  hidden dimension or |Σ_h ê_ih|, as the rows report it);
- its error estimate Δ_g = (1 / M) Σ_paths Σ_intervals Σ_{i ∈ g} ||K15_i - G7_i|| (the interval's two
  rules on the same 15 gradient evaluations, QUADPACK's estimate, per token; a token magnitude moves by at
  most the norm of its vector's error, and the sums only add the triangle inequality's slack);
- the order is certain when, for every target, the top group's score exceeds every other's by more than
  their two errors together: margin = min_{g ≠ top} (S_top - S_g) - (Δ_top + Δ_g) > 0.

The rule stops when the margin is positive and App. B.4's largest residual holds (each path's exact
residual |Σ K15 - gap| within ``RESIDUAL_MAX_FACTOR`` x tolerance, 0.05): the exact check that catches a
feature between nodes, which the per-token estimates cannot see. Until then it bisects, in the path that
holds the largest share of the deciding pair's error (or of the residual, when only that fails), the
interval with the largest error on that pair. It certifies the order, not the values: the rows still
report the residual (Eq. 9) and the bound it reached, and a question whose order is not certain within the
budget is flagged ``budget_exhausted`` like any other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from xurs_pipeline.attribution.reduction import reduce_tokens


@dataclass(frozen=True)
class ReadPayload:
    """One interval's (or a sum of intervals') K15-weighted attribution vector (T, L, d) and the per-group
    error estimate (G, T) of the read groups (Σ over the group's tokens of the reduced K15 - G7 vector)."""

    vector: torch.Tensor
    error: np.ndarray

    def __add__(self, other: ReadPayload) -> ReadPayload:
        return ReadPayload(self.vector + other.vector, self.error + other.error)


@dataclass(frozen=True)
class ReadCheck:
    """Where the order stands: ``margin`` (the smallest over targets, > 0 when certain), and the deciding
    (target, top group, runner-up group) whose error the refinement should cut."""

    margin: float
    pair: tuple[int, int, int]


@dataclass(frozen=True)
class ReadGroups:
    """groups: the read positions of each group (at least two groups, disjoint, non-empty);
    reduction: how a token's vector becomes its magnitude (``l2`` or ``abs_sum``)."""

    groups: tuple[tuple[int, ...], ...]
    reduction: str = "l2"

    def __post_init__(self) -> None:
        flat = [i for g in self.groups for i in g]
        if len(self.groups) < 2 or any(not g for g in self.groups) or len(set(flat)) != len(flat):
            raise ValueError(
                f"attribution.kronrod_stop='read' orders at least two disjoint, non-empty groups of read "
                f"positions; got {[list(g) for g in self.groups]}"
            )
        if min(flat) < 0:
            raise ValueError(f"read positions must be >= 0; got {[list(g) for g in self.groups]}")

    def payload(self, k15: torch.Tensor, g7: torch.Tensor) -> ReadPayload:
        """An interval's payload from its K15- and G7-weighted vectors, each (T, L, d)."""
        return ReadPayload(k15, self.group_sums(self._magnitudes(k15 - g7)))

    def group_sums(self, per_token: np.ndarray) -> np.ndarray:
        """(T, L) -> (G, T): each group's sum."""
        return np.stack([per_token[:, list(g)].sum(1) for g in self.groups])

    def _magnitudes(self, coords: torch.Tensor) -> np.ndarray:
        """(T, L, d) -> (T, L) float64 token magnitudes."""
        return np.stack([reduce_tokens(c, self.reduction).double().cpu().numpy() for c in coords])

    def check(self, per_path: list[ReadPayload], n_paths: int) -> ReadCheck:
        """The order of the averaged vector (Σ over ``per_path`` / ``n_paths``, the references M; pieces
        of a block path are summed into their reference's share alike)."""
        vector = sum((p.vector for p in per_path[1:]), per_path[0].vector) / n_paths
        error = sum((p.error for p in per_path[1:]), per_path[0].error) / n_paths  # (G, T)
        score = self.group_sums(self._magnitudes(vector))  # (G, T)
        best = (np.inf, (0, 0, 1))
        for t in range(score.shape[1]):
            top = int(np.argmax(score[:, t]))
            for g in range(len(self.groups)):
                if g != top:
                    m = score[top, t] - score[g, t] - error[top, t] - error[g, t]
                    if m < best[0]:
                        best = (float(m), (t, top, g))
        return ReadCheck(*best)

    @staticmethod
    def pair_error(payload: ReadPayload, pair: tuple[int, int, int]) -> float:
        """The error estimate of ``payload`` (an interval's, or a path's sum) on the deciding pair."""
        t, top, other = pair
        return float(payload.error[top, t] + payload.error[other, t])
