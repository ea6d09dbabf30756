"""Importance sampling along each reference's path, for the ``certified`` rule: points where F changes.

On a trained model F swings from F(B_r) to F(X) within a short stretch of the straight path, so a lattice
uniform in α puts few points where g_r(α) = dF/dα is large and the references' errors stay large. The warp
is a change of variables α = P_r^{-1}(s) with a density p_r on [0, 1] that follows |dF/dα|:

    ∫_0^1 g_r(α) dα = ∫_0^1 g_r(P_r^{-1}(s)) / p_r(P_r^{-1}(s)) ds,

so the lattice of ``certified.py`` runs on s unchanged (nested, unbiased under a random shift, its nested
difference an error estimate), each node at α = P_r^{-1}(s) weighted 1 / p_r(α). Where p_r ∝ |g_r| and g_r
keeps one sign, every node's weighted slope equals the gap and the scalar estimate has no error; each token's
product (X - B) ⊙ ∇F is weighted alike, so nothing is rescaled: every estimate stays unbiased for any p_r > 0.

p_r is fitted by forwards alone (:func:`fit`): F at ``points`` equally spaced interior points a reference.
An equal grid, not one refined by bisection: on ``local``'s trained paths, which swing back and forth at
many places, bisecting from 15 equal points where F changes most between two forwards refines the swings
it has seen and misses those between its first points (BENCHMARKS.md section 25 compares the two). The
cumulative share of Σ_t |ΔF_t| (each target's variation normalised) at the grid's edges is joined by a
monotone cubic V (PCHIP), and p_r = (1 - ``FLOOR``) V' + ``FLOOR``, tabulated on ``TABLE`` equal cells: the
floor keeps every α reachable, for tokens whose effects cancel where F is flat. A path along which F does
not change gets the uniform density (the plain lattice).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.interpolate import PchipInterpolator  # type: ignore[import-untyped]

from xurs_pipeline.attribution.certified import Evaluate

FLOOR = 0.4  # the uniform share of every density (0.1, 0.2, 0.4 measured: BENCHMARKS section 25)
TABLE = 1024  # equal cells the smooth density is tabulated on

# values(index (n,), alpha (n,)) -> F_t at those points of those references' paths (n, T), forwards only
Values = Callable[[np.ndarray, np.ndarray], np.ndarray]
# weighted([(ref, alphas (n,), weights (n,)), ...]) -> per triple (slopes (n, T) each times its weight,
# Σ over the nodes of weight x (X - B) ⊙ ∇F_t (T, ...)): ``certified.Evaluate`` with weights
Weighted = Callable[[list[tuple[int, np.ndarray, np.ndarray]]], list[tuple[np.ndarray, torch.Tensor]]]


@dataclass(frozen=True)
class Warp:
    """Per reference a piecewise-constant density on α: edges (M, K + 1) from 0 to 1, density (M, K) > 0
    with Σ density x segment length = 1, cdf (M, K + 1) its integral at the edges."""

    edges: np.ndarray
    density: np.ndarray

    @property
    def cdf(self) -> np.ndarray:
        """P_r at the edges (M, K + 1)."""
        return np.stack([self._cdf(r) for r in range(len(self.density))])

    def _cdf(self, ref: int) -> np.ndarray:
        """Reference ``ref``'s P at its edges (K + 1,): one row, so placing a reference's nodes is O(K)."""
        return np.concatenate([[0.0], np.cumsum(self.density[ref] * np.diff(self.edges[ref]))])

    def place(self, ref: int, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lattice points s (n,) in [0, 1] -> (α = P_r^{-1}(s) (n,), weights 1 / p_r(α) (n,))."""
        cdf = self._cdf(ref)
        k = np.clip(np.searchsorted(cdf, s, side="right") - 1, 0, self.density.shape[1] - 1)
        p = self.density[ref, k]
        alpha = np.clip(self.edges[ref, k] + (s - cdf[k]) / p, 0.0, 1.0)
        return alpha, 1.0 / p

    def wrap(self, weighted: Weighted) -> Evaluate:
        """``certified.Evaluate`` on lattice points s: each reference's nodes placed and weighted."""

        def evaluate(nodes: list[tuple[int, np.ndarray]]) -> list[tuple[np.ndarray, torch.Tensor]]:
            return weighted([(r, *self.place(r, s)) for r, s in nodes])

        return evaluate


def uniform(n_refs: int) -> Warp:
    """No warp: every reference's density 1 on [0, 1] (α = s, every weight 1)."""
    return Warp(np.tile([0.0, 1.0], (n_refs, 1)), np.ones((n_refs, 1)))


def fit(values: Values, start: np.ndarray, end: np.ndarray, points: int) -> Warp:
    """The warp of ``points`` forwards a reference (module docstring); start (M, T) F(B_r), end (T,) F(X)."""
    grid = np.linspace(0.0, 1.0, points + 2)  # every reference's path alike
    inner = _evaluate(values, np.tile(grid[1:-1], (len(start), 1)))
    f = np.concatenate([start[:, None], inner, np.broadcast_to(end, start.shape)[:, None]], axis=1)
    return Warp(*_smooth_density(grid, f))


def _evaluate(values: Values, alphas: np.ndarray) -> np.ndarray:
    """F at alphas (M, k) of every reference, one call: (M, k, T)."""
    n_refs, k = alphas.shape
    out = values(np.repeat(np.arange(n_refs), k), alphas.reshape(-1))
    return out.reshape(n_refs, k, -1)


def _shares(f: np.ndarray) -> np.ndarray:
    """Each segment's share of the path's variation, f (M, K + 1, T) -> (M, K): per target |ΔF_t| over its
    sum over the segments, averaged over the targets; a target along which F is flat adds equal shares."""
    steps = np.abs(np.diff(f, axis=1))  # (M, K, T)
    total = steps.sum(1, keepdims=True)
    flat = np.full_like(steps, 1.0 / steps.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, steps / total, flat)
    result: np.ndarray = share.mean(2)
    return result


def _smooth_density(grid: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The density on a table of ``TABLE`` equal cells (edges (M, TABLE + 1), density (M, TABLE)) from F
    at the grid (K + 1,) of every path, f (M, K + 1, T): (1 - FLOOR) x V' + FLOOR, V the monotone cubic
    (PCHIP, C1, one interpolator for all M paths) through the cumulative variation share at the grid, so
    the density follows |dF/dα| between the forwards and changes continuously (a density with jumps would
    cost the lattice its second order, as a kinked integrand does)."""
    cumulative = np.concatenate([np.zeros((len(f), 1)), np.cumsum(_shares(f), axis=1)], axis=1)
    table = np.linspace(0.0, 1.0, TABLE + 1)
    v = PchipInterpolator(grid, cumulative, axis=1)(table)  # (M, TABLE + 1)
    v = np.maximum.accumulate(np.clip(v, 0.0, 1.0), axis=1)  # monotone by construction; rounding only
    density = (1.0 - FLOOR) * np.diff(v, axis=1) / np.diff(table) + FLOOR
    return np.tile(table, (len(f), 1)), density / (density * np.diff(table)).sum(1, keepdims=True)
