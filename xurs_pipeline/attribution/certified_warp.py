"""Point placement for the ``certified`` rule: a per-reference change of variables α = φ_r(τ) that puts the
lattice's points where the path's width changes (``certified.py``).

The trained model's paths swing from one width to another within a short stretch of α: a uniform lattice
spends most of its points where g_r = dF/dα is flat, and its error over the shifts stays large until its
spacing resolves the swing. A pilot (``pilot_nodes`` points a reference, one batched call) measures F along
each path (every gradient evaluation returns F at its node for free); with F(B_r) and F(X) at the ends,
the sorted pilot nodes split [0, 1] into intervals, each with its change |ΔF|. The density

    p_r(α) = λ + (1 - λ) |ΔF_i| / (Σ_i |ΔF_i| |I_i|)   on interval I_i   (λ = ``FLOOR``, summed over targets)

is piecewise constant, integrates to 1 and is never below λ; its distribution function Φ_r (piecewise
linear) maps α to τ, and φ_r = Φ_r^-1. The integral becomes ∫_0^1 g_r(φ_r(τ)) φ_r'(τ) dτ, on which the
rule's tent lattice runs unchanged: node τ_j, point α_j = φ_r(τ_j), weight φ_r'(τ_j) / n = 1 / (n p_r(α_j)).
For a shift independent of the pilot this stays unbiased (a fixed change of variables, given the pilot),
nested (doubling adds the τ-midpoints) and exact for the completeness arithmetic (the gap is unchanged).
The swing's interval gets a share of the points near its share of |ΔF|, so its spike is resolved at far
fewer points. The pilot's own evaluations are counted and not used in the estimate. Nothing rescales a
score: every node's vector enters with the weight of the change of variables, fixed before it is evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOOR = 0.25  # the uniform share λ of the density: every stretch of α keeps at least a quarter of its points


@dataclass(frozen=True)
class Warp:
    """A monotone piecewise-linear map φ: [0, 1] -> [0, 1], given by its knots: ``alpha`` (k,) and ``tau``
    (k,) both increasing from 0 to 1 (τ = Φ(α))."""

    alpha: np.ndarray
    tau: np.ndarray

    @classmethod
    def identity(cls) -> Warp:
        return cls(np.array([0.0, 1.0]), np.array([0.0, 1.0]))

    def point(self, tau: np.ndarray) -> np.ndarray:
        """α = φ(τ) (n,)."""
        return np.interp(tau, self.tau, self.alpha)

    def weight(self, tau: np.ndarray) -> np.ndarray:
        """φ'(τ) = 1 / p(φ(τ)) (n,): the change of variables' weight at each node."""
        piece = np.clip(np.searchsorted(self.tau, tau, side="right") - 1, 0, len(self.tau) - 2)
        return np.diff(self.alpha)[piece] / np.diff(self.tau)[piece]


def warp_from_pilot(alphas: np.ndarray, values: np.ndarray, start: np.ndarray, end: np.ndarray) -> Warp:
    """The warp of the module docstring from one reference's pilot: nodes ``alphas`` (n,), F there
    ``values`` (n, T), F(B_r) ``start`` (T,) and F(X) ``end`` (T,)."""
    order = np.argsort(alphas)
    knots = np.concatenate([[0.0], np.asarray(alphas, dtype=np.float64)[order], [1.0]])
    f = np.vstack([start[None, :], np.asarray(values, dtype=np.float64)[order], end[None, :]])
    keep = np.concatenate([[True], np.diff(knots) > 0])  # a node at an end or twice: one knot
    knots, f = knots[keep], f[keep]
    change = np.abs(np.diff(f, axis=0)).sum(1)  # |ΔF| per interval, summed over targets
    length = np.diff(knots)
    if change.sum() <= 0 or len(length) < 2:
        return Warp.identity()
    mass = FLOOR * length + (1.0 - FLOOR) * change / change.sum()  # each interval's share of τ
    tau = np.concatenate([[0.0], np.cumsum(mass)])
    tau[-1] = 1.0
    return Warp(knots, tau)
