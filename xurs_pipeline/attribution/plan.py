"""Sampling plans: which (reference, alpha, weight) triples the gradient loop evaluates.

An EG plan (Eq. 3) draws references and alphas from a seeded ``numpy.random.RandomState`` in the
same order as Captum's ``GradientShap`` (``choice`` of reference indices, then ``uniform`` alphas),
so ``np.random.seed(plan.seed)`` before ``GradientShap.attribute(..., n_samples=n, stdevs=0)``
replays exactly this plan. IG plans are deterministic quadrature rules on [0, 1].
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

QUADRATURES = ("gausslegendre", "riemann_trapezoid", "riemann_left", "riemann_right", "riemann_middle")


@dataclass(frozen=True)
class SamplingPlan:
    """n gradient samples: reference index (n,), alpha in [0, 1] (n,), weight (n,); weights sum to 1."""

    ref_index: np.ndarray
    alpha: np.ndarray
    weight: np.ndarray
    seed: int | None = None

    def __post_init__(self) -> None:
        n = len(self.ref_index)
        if not len(self.alpha) == len(self.weight) == n or n == 0:
            raise ValueError(
                f"plan arrays must be non-empty and equally long, got {n}, {len(self.alpha)}, "
                f"{len(self.weight)}"
            )

    def __len__(self) -> int:
        return len(self.ref_index)

    def to(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The plan as device tensors (one host-to-device copy): long (n,), float32 (n,), float32 (n,)."""
        return (
            torch.as_tensor(self.ref_index, dtype=torch.long).to(device),
            torch.as_tensor(self.alpha, dtype=torch.float32).to(device),
            torch.as_tensor(self.weight, dtype=torch.float32).to(device),
        )

    def draws(self, n_refs: int) -> np.ndarray:
        """How often each of ``n_refs`` references is drawn, (n_refs,) int."""
        return np.bincount(self.ref_index, minlength=n_refs)


def collection_seed(base_seed: int, collection: int) -> int:
    """The plan seed of reference collection k: base seed for k = 0, then SeedSequence-derived."""
    if collection == 0:
        return int(base_seed)
    return int(np.random.SeedSequence([int(base_seed), int(collection)]).generate_state(1)[0])


def eg_plan(n_refs: int, n_samples: int, seed: int) -> SamplingPlan:
    """Expected Gradients plan (Eq. 3): B ~ uniform over the collection, alpha ~ U[0, 1], weight 1/n."""
    if n_refs < 1 or n_samples < 1:
        raise ValueError(f"eg_plan needs n_refs >= 1 and n_samples >= 1, got {n_refs}, {n_samples}")
    rng = np.random.RandomState(seed)
    ref_index = rng.choice(n_refs, n_samples)  # GradientShap: _expand_and_update_baselines
    alpha = rng.uniform(0.0, 1.0, n_samples)  # GradientShap: InputBaselineXGradient.attribute
    return SamplingPlan(ref_index.astype(np.int64), alpha, np.full(n_samples, 1.0 / n_samples), seed)


def quadrature(rule: str, n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (n,) on [0, 1] with weights summing to 1.

    gausslegendre: exact for polynomials of degree <= 2n - 1 (numpy.polynomial.legendre.leggauss).
    riemann_trapezoid: n equally spaced nodes including both ends, h = 1/(n-1), end weights h/2
      (Captum's ``riemann_trapezoid`` uses weights 1/n whose total is (n-1)/n; ours integrate 1 exactly).
    riemann_left / right / middle: n cells of width 1/n, node at the cell's left / right end / middle.
    """
    if rule == "gausslegendre":
        if n_points < 1:
            raise ValueError(f"gausslegendre needs >= 1 point, got {n_points}")
        nodes, weights = np.polynomial.legendre.leggauss(n_points)
        return (nodes + 1.0) / 2.0, weights / 2.0
    if rule not in QUADRATURES:
        raise ValueError(f"ig_quadrature={rule!r}: must be one of {QUADRATURES}")
    if n_points < 2:
        raise ValueError(f"{rule} needs >= 2 points, got {n_points}")
    if rule == "riemann_trapezoid":
        weights = np.full(n_points, 1.0 / (n_points - 1))
        weights[[0, -1]] /= 2.0
        return np.linspace(0.0, 1.0, n_points), weights
    offset = {"riemann_left": 0.0, "riemann_right": 1.0, "riemann_middle": 0.5}[rule]
    return (np.arange(n_points) + offset) / n_points, np.full(n_points, 1.0 / n_points)


def ig_plan(ref_index: int, rule: str, n_points: int) -> SamplingPlan:
    """Integrated Gradients plan for one reference: quadrature nodes as alphas, weights as weights."""
    nodes, weights = quadrature(rule, n_points)
    return SamplingPlan(np.full(n_points, ref_index, dtype=np.int64), nodes, weights)


def batches(n: int, size: int) -> Iterator[slice]:
    """Consecutive slices of at most ``size`` covering range(n)."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))
