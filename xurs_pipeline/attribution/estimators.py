"""Expected Gradients (Eq. 3) and Integrated Gradients with per-reference residuals and refinement.

Both return, for one reference collection, the per-target coordinate attributions e (T, L, d) in
float32 (answer-set columns already added with their signs, Eq. 4), the mean prepared reference width
the attributions should account for (Eq. 9), and bookkeeping (draws, points, residuals, flags).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from xurs_pipeline.attribution.gradients import Prompt, accumulate
from xurs_pipeline.attribution.model import Objective, WidthModel
from xurs_pipeline.attribution.plan import SamplingPlan, eg_plan, ig_plan
from xurs_pipeline.attribution.references import PreparedReferences


@dataclass
class CollectionResult:
    """One collection's estimate for targets T.

    e: (T, L, d) float32.  reference_mean: (T,) float32, mean F_c(B) the sum of e should match (Eq. 9).
    draws: (M,) EG draws per reference (IG: 1 each).  points: (M,) IG points per reference (EG: 0).
    ref_residual: (M, T) IG per-reference completeness residuals (EG: empty (0, T)).
    nonfinite_refs: reference indices with a non-finite sample.  grad_evals: gradient samples used.
    """

    e: torch.Tensor
    reference_mean: torch.Tensor
    draws: np.ndarray
    points: np.ndarray
    ref_residual: np.ndarray
    nonfinite_refs: list[int]
    grad_evals: int
    plan_seed: int | None


def _bad_refs(plan: SamplingPlan, flags: torch.Tensor) -> list[int]:
    bad = flags.cpu().numpy()
    return sorted({int(r) for r in plan.ref_index[bad]})


def expected_gradients(
    model: WidthModel,
    objective: Objective,
    prompt: Prompt,
    refs: PreparedReferences,
    ref_widths: torch.Tensor,
    n_samples: int,
    seed: int,
    samples_per_call: int,
    on_batch: Callable[[int], None] | None = None,
    reuse_prefix: bool = True,
) -> CollectionResult:
    """EG (Eq. 3) over the collection with a seeded plan; ``ref_widths`` (M, 4) are prepared widths."""
    plan = eg_plan(len(refs), n_samples, seed)
    sums = accumulate(model, objective, prompt, refs, plan, samples_per_call, on_batch, reuse_prefix)
    draws = plan.draws(len(refs))
    targets = list(objective.targets)
    weights = torch.as_tensor(draws / draws.sum(), dtype=torch.float32, device=ref_widths.device)
    reference_mean = weights @ ref_widths[:, targets]  # (T,) mean over the sampled references, Eq. 9
    return CollectionResult(
        e=objective.group(sums.e),
        reference_mean=reference_mean,
        draws=draws,
        points=np.zeros(len(refs), dtype=np.int64),
        ref_residual=np.zeros((0, len(targets))),
        nonfinite_refs=_bad_refs(plan, sums.nonfinite),
        grad_evals=sums.grad_evals,
        plan_seed=seed,
    )


def integrated_gradients(
    model: WidthModel,
    objective: Objective,
    prompt: Prompt,
    refs: PreparedReferences,
    ref_widths: torch.Tensor,
    input_widths: torch.Tensor,
    rule: str,
    n_points: int,
    samples_per_call: int,
    adaptive: bool = False,
    tolerance: float = 0.01,
    refine_factor: int = 4,
    max_points: int = 2048,
    on_batch: Callable[[int], None] | None = None,
    reuse_prefix: bool = True,
) -> CollectionResult:
    """IG per reference with quadrature ``rule``; average over references with equal weights.

    Each reference's completeness residual |Σ e_r - (F_c(X) - F_c(B_r))| is checked before averaging;
    with ``adaptive`` a reference above ``tolerance`` (for any target) is recomputed with
    ``refine_factor`` times more points until it passes or reaches ``max_points``.
    """
    targets = list(objective.targets)
    gap = (input_widths[targets][None, :] - ref_widths[:, targets]).cpu().numpy()  # (M, T)
    total = torch.zeros(
        (len(targets), *prompt.embeds.shape[1:]), dtype=torch.float32, device=prompt.embeds.device
    )
    points = np.zeros(len(refs), dtype=np.int64)
    residual = np.zeros((len(refs), len(targets)))
    bad: set[int] = set()
    grad_evals = 0
    for r in range(len(refs)):
        n = n_points
        while True:
            plan = ig_plan(r, rule, n)
            sums = accumulate(model, objective, prompt, refs, plan, samples_per_call, on_batch, reuse_prefix)
            grad_evals += sums.grad_evals
            e_r = objective.group(sums.e)  # (T, L, d)
            residual[r] = np.abs(objective.group(sums.per_ref[r]).cpu().numpy() - gap[r])
            if bool(sums.nonfinite.any()):
                bad.add(r)
                break
            if not adaptive or residual[r].max() <= tolerance or n >= max_points:
                break
            n = min(n * refine_factor, max_points)
        points[r] = n
        total.add_(e_r, alpha=1.0 / len(refs))
    return CollectionResult(
        e=total,
        reference_mean=ref_widths[:, targets].mean(0),
        draws=np.ones(len(refs), dtype=np.int64),
        points=points,
        ref_residual=residual,
        nonfinite_refs=sorted(bad),
        grad_evals=grad_evals,
        plan_seed=None,
    )
