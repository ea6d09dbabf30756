"""Adaptive trapezoid quadrature checked interval by interval (``kronrod`` with ``kronrod_rule=trapezoid``).

Each reference r has a scalar integrand per target, g_r(α) = dF/dα = (X - B_r) · ∇F(Z_r(α)) on [0, 1]. A
gradient evaluation at a node α gives g_r(α) and, from the same forward, F(Z_r(α)). So every interval [a, b]
between two nodes has an exact integral, F(b) - F(a), beside the trapezoid's (b - a) (g(a) + g(b)) / 2, and
their difference is the interval's exact scalar error (completeness, Eq. 9, interval by interval). The error
bound of a reference is the sum of its intervals' absolute errors: never below its residual (the errors'
sum), and it catches errors that cancel between intervals.

Refinement adds the midpoint of the intervals with the largest errors: one gradient evaluation splits an
interval in two (``kronrod``'s bisection costs 30), and every earlier node is kept. Each round evaluates up
to ``batch`` midpoints in one call: the worst interval of each of the references that fail the rule most
(``KronrodSpec.lead``), then their next-worst, and so on. The stopping rules are ``kronrod``'s
(``quadrature.KronrodSpec``): ``bound`` (the mean bound within the tolerance) or ``residual`` (App. B.4's
per-reference rule: mean residual within the tolerance, largest within 5 x).

The attribution vector of a reference is Σ_nodes w_n V_n with trapezoid weights w_n (half of each adjacent
interval's width) and V_n = (X - B_r) ⊙ ∇F at node n; a split changes the weights of the interval's two
ends, so every node's vector is held until the end: nodes x T x L x d float32 (at 88 tokens of width 576,
about 0.2 MB a node and target).

On `local`'s paths its residual rule alone leaves the per-token split far from a rerun, and its bound rule
meets App. B.4 at 0.86 of K15's evaluations (docs/certification.md). A pure function of an ``evaluate``
callback, tested on analytic integrands (tests/attribution/test_trapezoid.py), driven by the gradient loop
in ``estimators.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from xurs_pipeline.attribution.quadrature import (
    MIN_WIDTH,
    BudgetError,
    KronrodReport,
    KronrodSpec,
    refine_until,
)

# evaluate(refs (n,), alphas (n,)) -> (slopes (n, T) dF_t/dα, values (n, T) F_t, vectors (n, T, ...) the
# unweighted (X - B_r) ⊙ ∇F_t at each node): one batched call for nodes of several references
Evaluate = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, torch.Tensor]]


@dataclass
class _Path:
    """The nodes of one reference, in order of α: α (n,), slopes and F values (n, T), vectors (n, T, ...)."""

    alpha: np.ndarray
    slope: np.ndarray
    value: np.ndarray
    vectors: list[torch.Tensor]

    def errors(self) -> np.ndarray:
        """Each interval's signed error per target (n - 1, T): trapezoid minus F(b) - F(a)."""
        h = np.diff(self.alpha)[:, None]
        error: np.ndarray = h * (self.slope[:-1] + self.slope[1:]) / 2 - np.diff(self.value, axis=0)
        return error

    def weights(self) -> np.ndarray:
        """Trapezoid weight of each node (n,): half the width of each interval it ends."""
        half = np.diff(self.alpha) / 2
        weight: np.ndarray = np.concatenate([[0.0], half]) + np.concatenate([half, [0.0]])
        return weight

    def insert(self, alpha: float, slope: np.ndarray, value: np.ndarray, vector: torch.Tensor) -> None:
        k = int(np.searchsorted(self.alpha, alpha))
        self.alpha = np.insert(self.alpha, k, alpha)
        self.slope = np.insert(self.slope, k, slope, axis=0)
        self.value = np.insert(self.value, k, value, axis=0)
        self.vectors.insert(k, vector)


def _first_pass(evaluate: Evaluate, ends: np.ndarray, spec: KronrodSpec) -> tuple[list[_Path], int]:
    """Every reference at ``spec.initial_intervals`` + 1 equally spaced nodes; the F values at α = 0 and 1
    are the exact ends ``ends`` (M, 2, T), so the intervals' exact integrals add up to the gap."""
    n_refs, nodes = len(ends), spec.initial_intervals + 1
    cost = n_refs * nodes
    if cost > spec.max_evals:
        raise BudgetError(
            f"attribution.kronrod_max_evals={spec.max_evals}: below the trapezoid's first pass of {cost} "
            f"evaluations ({n_refs} references x {nodes} nodes)"
        )
    alpha = np.linspace(0.0, 1.0, nodes)
    slope, value, vectors = evaluate(np.repeat(np.arange(n_refs), nodes), np.tile(alpha, n_refs))
    paths = []
    for r in range(n_refs):
        rows = slice(r * nodes, (r + 1) * nodes)
        v = np.array(value[rows], dtype=np.float64)
        v[0], v[-1] = ends[r, 0], ends[r, 1]
        paths.append(_Path(alpha.copy(), np.array(slope[rows], dtype=np.float64), v, list(vectors[rows])))
    return paths, cost


def _picks(paths: list[_Path], lead: np.ndarray, count: int) -> list[tuple[int, float]]:
    """Up to ``count`` (reference, midpoint) pairs: the worst splittable interval of each reference in the
    order of ``lead`` (M,), then the next-worst, and so on."""
    ranked = []
    for path in paths:
        err = np.abs(path.errors()).max(axis=1)
        wide = np.flatnonzero(np.diff(path.alpha) > 2 * MIN_WIDTH)
        ranked.append(wide[np.argsort(-err[wide], kind="stable")])
    order = np.argsort(-lead, kind="stable")
    picks: list[tuple[int, float]] = []
    for depth in range(max(len(k) for k in ranked)):
        for r in order:
            if depth < len(ranked[r]) and len(picks) < count:
                k = ranked[r][depth]
                picks.append((int(r), float((paths[r].alpha[k] + paths[r].alpha[k + 1]) / 2)))
    return picks


def _summary(paths: list[_Path], gap: np.ndarray) -> tuple[np.ndarray, ...]:
    errors = [p.errors() for p in paths]
    integral = gap + np.stack([e.sum(axis=0) for e in errors])  # (M, T)
    estimate = np.stack([np.abs(e).sum(axis=0) for e in errors])
    return integral, np.abs(integral - gap), estimate, estimate.max(axis=1)


def integrate(evaluate: Evaluate, ends: np.ndarray, spec: KronrodSpec, batch: int = 8) -> KronrodReport:
    """Adaptive trapezoid of M integrands on [0, 1] with F at their ends ``ends`` (M, 2, T): the exact
    integrals are ``ends[:, 1] - ends[:, 0]``. Rounds of up to ``batch`` new nodes until ``spec``'s rule
    holds or its budget ``spec.max_evals`` is spent (then ``exhausted``)."""
    ends = np.asarray(ends, dtype=np.float64).reshape(len(ends), 2, -1)
    gap = ends[:, 1] - ends[:, 0]
    paths, first = _first_pass(evaluate, ends, spec)

    def check() -> tuple[np.ndarray, np.ndarray]:
        _, residual, _, bound = _summary(paths, gap)
        return bound, residual

    def refine(bound: np.ndarray, per_ref: np.ndarray, evals: int) -> int | None:
        picks = _picks(paths, spec.lead(bound, per_ref), min(batch, spec.max_evals - evals))
        if not picks:  # the budget is spent, or every interval is at the resolution limit
            return None
        refs, alphas = (np.array(c) for c in zip(*picks, strict=True))
        slope, value, vectors = evaluate(refs, alphas)
        for j, (r, a) in enumerate(picks):
            paths[r].insert(a, np.asarray(slope[j], np.float64), np.asarray(value[j], np.float64), vectors[j])
        return len(picks)

    evals, exhausted, steps = refine_until(spec, check, refine, first)
    integral, residual, estimate, bound = _summary(paths, gap)
    vectors = []
    for p in paths:
        w = torch.as_tensor(p.weights(), dtype=torch.float32, device=p.vectors[0].device)
        vectors.append(torch.tensordot(w, torch.stack(p.vectors), dims=1))
    variation = np.stack([p.weights() @ np.abs(p.slope) for p in paths])
    counts = np.array([len(p.alpha) - 1 for p in paths])
    return KronrodReport(
        integral, residual, estimate, bound, variation, counts, vectors, evals, exhausted, steps
    )
