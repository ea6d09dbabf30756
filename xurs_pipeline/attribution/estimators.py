"""The estimators of one reference collection: Expected Gradients (Eq. 3), Integrated Gradients (fixed or
refined per reference), adaptive Gauss-Kronrod quadrature (``quadrature.py``) and the ``certified`` rule on
the averaged attribution (``certified.py``), on a shared base.

Captum's shape: each estimator is a small spec object that owns its plan, its ``attribute`` call and its
convergence report. All of them return a :class:`CollectionResult`: the per-target coordinate attributions
e (T, L, d) in float32 (answer-set columns already added with their signs, Eq. 4), the mean prepared
reference width the attributions should account for (Eq. 9), and the report: draws and points per
reference, per-reference residuals, the estimator's own error bound on the collection's residual, the total
variation of F along each path (roughness, against the net difference), gradient evaluations and whether
the budget ran out before the tolerance.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from xurs_pipeline.attribution import path_warp, trapezoid
from xurs_pipeline.attribution.certified import Z_95, CertifiedSpec, certify
from xurs_pipeline.attribution.endpoints import path_values
from xurs_pipeline.attribution.gradients import Batching, GradientSums, accumulate
from xurs_pipeline.attribution.model import Objective, Prompt, WidthModel
from xurs_pipeline.attribution.paths import Pieces
from xurs_pipeline.attribution.plan import SamplingPlan, eg_plan, ig_plan
from xurs_pipeline.attribution.quadrature import (
    NODES_PER_INTERVAL,
    TRACE_COLUMNS,
    KronrodReport,
    KronrodSpec,
    gauss_over_kronrod,
    integrate,
)
from xurs_pipeline.attribution.read_order import ReadGroups, ReadPayload
from xurs_pipeline.attribution.references import PreparedReferences


@dataclass(frozen=True)
class PathProblem:
    """One question's paths to one reference collection: what every estimator integrates.

    ref_widths: (M, 4) prepared reference widths F(B_r) (Eq. 9).  input_widths: (4,) F(X).
    pieces: a piecewise path (``paths.py``): ``refs`` then holds its J pieces, each from its start to its
      end, and ``pieces.owner`` (J,) names the reference each belongs to; piece_widths: (J, 4) F at each
      piece's end minus F at its start. None: the straight path, one piece per reference (J = M).
    read: the groups of positions the caller reads (``read_order.py``; kronrod's ``read`` rule), or None.
    """

    model: WidthModel
    objective: Objective
    prompt: Prompt
    refs: PreparedReferences
    ref_widths: torch.Tensor
    input_widths: torch.Tensor
    samples_per_call: int = 8
    reuse_prefix: bool = True
    on_batch: Callable[[int], None] | None = None
    pieces: Pieces | None = None
    piece_widths: torch.Tensor | None = None
    read: ReadGroups | None = None

    @property
    def targets(self) -> list[int]:
        return list(self.objective.targets)

    @property
    def n_paths(self) -> int:
        """M, the references (each a path from B_r to X, of one piece or several)."""
        return len(self.ref_widths)

    def gap(self) -> np.ndarray:
        """The exact integral over each piece per target (J, T): F_t(X) - F_t(B_r) on straight paths."""
        t = self.targets
        if self.piece_widths is not None:
            return self.piece_widths[:, t].cpu().numpy().astype(np.float64)
        return (self.input_widths[t][None, :] - self.ref_widths[:, t]).cpu().numpy().astype(np.float64)

    def per_path(self, values: np.ndarray) -> np.ndarray:
        """Per-piece values (J, ...) summed over each reference's pieces -> (M, ...); straight: unchanged."""
        if self.pieces is None:
            return values
        total = np.zeros((self.n_paths, *values.shape[1:]), dtype=values.dtype)
        np.add.at(total, self.pieces.owner, values)
        return total

    def path_of(self, piece: int) -> int:
        """The reference (0..M-1) that piece ``piece`` belongs to."""
        return piece if self.pieces is None else int(self.pieces.owner[piece])

    def straight_only(self, method: str, why: str) -> None:
        """ValueError naming ``attribution.path`` when the paths are piecewise (``method`` needs straight)."""
        if self.pieces is not None:
            raise ValueError(f"attribution.method={method!r} {why}: use path='straight'")

    def run(
        self, plan: SamplingPlan, split_references: bool = False, split_samples: bool = False
    ) -> GradientSums:
        batching = Batching(self.on_batch, self.reuse_prefix, split_references, split_samples)
        return accumulate(
            self.model, self.objective, self.prompt, self.refs, plan, self.samples_per_call, batching
        )

    def values(self, index: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """F_t at α along references ``index``' straight paths, forwards only (n, T) float64."""
        batch = 4 * self.samples_per_call  # no activations kept for a backward pass
        model, objective, refs = self.model, self.objective, self.refs
        return path_values(model, objective, self.prompt, refs, (index, alpha), batch, self.reuse_prefix)

    def slopes(self, sums: GradientSums) -> np.ndarray:
        """Each sample's dF_t/dα per explained target, float64 (n, T), from a run's per-column slopes."""
        return self.objective.group(sums.slope.T).T.cpu().numpy().astype(np.float64)

    def path_widths(self, sums: GradientSums) -> np.ndarray:
        """F_t at each sample per explained target, float64 (n, T), from a run's per-column values."""
        return self.objective.group(sums.value.T).T.cpu().numpy().astype(np.float64)

    def ends(self) -> np.ndarray:
        """F_t at each straight path's two ends, (M, 2, T) float64: the reference's, then the prompt's."""
        t = self.targets
        start = self.ref_widths[:, t].double().cpu().numpy()
        end = np.broadcast_to(self.input_widths[t].double().cpu().numpy(), start.shape)
        return np.stack([start, end], axis=1)

    def zeros(self) -> torch.Tensor:
        """A float32 (T, L, d) accumulator on the prompt's device."""
        x = self.prompt.embeds
        return torch.zeros((len(self.targets), *x.shape[1:]), dtype=torch.float32, device=x.device)


@dataclass
class CollectionResult:
    """One collection's estimate for targets T (M references).

    e: (T, L, d) float32.  reference_mean: (T,) float32, mean F_c(B) the sum of e should match (Eq. 9).
    draws: (M,) EG draws per reference (IG, kronrod: 1 each).  points: (M,) quadrature points per
      reference (EG: 0).  ref_residual: (M, T) per-reference completeness residuals |Σ e_r - (F(X) - F(B_r))|
      (EG: empty (0, T), a single draw has none).  error_bound: (T,) the estimator's own bound on the
      collection's residual (EG: 95% confidence half-width; IG: mean per-reference residual; kronrod: mean
      per-reference bound, quadrature.py).  variation: (M, T) ∫|dF/dα| along each path, the total variation
      of F (EG: the mean over the reference's draws, NaN if never drawn).  exhausted: the budget ran out
      before the tolerance (estimators with one).  nonfinite_refs: reference indices with a non-finite
      sample.  grad_evals: gradient samples used.  trace: kronrod's per-step record (``quadrature.py``,
      ``TRACE_COLUMNS``), empty for the others.  forwards: the estimator's own forwards beyond the
      endpoints (certified's path warp), 0 for the others.
    """

    e: torch.Tensor
    reference_mean: torch.Tensor
    draws: np.ndarray
    points: np.ndarray
    ref_residual: np.ndarray
    error_bound: np.ndarray
    variation: np.ndarray
    exhausted: bool
    nonfinite_refs: list[int]
    grad_evals: int
    plan_seed: int | None
    trace: np.ndarray = field(default_factory=lambda: np.zeros((0, len(TRACE_COLUMNS))))
    forwards: int = 0


def _bad_refs(plan: SamplingPlan, flags: torch.Tensor) -> list[int]:
    bad = flags.cpu().numpy()
    return sorted({int(r) for r in plan.ref_index[bad]})


class Estimator(ABC):
    """One attribution method: ``attribute`` one collection (its budget: the config's ``gradient_budget``)."""

    method: ClassVar[str]

    @abstractmethod
    def attribute(self, problem: PathProblem) -> CollectionResult: ...


@dataclass(frozen=True)
class ExpectedGradients(Estimator):
    """EG (Eq. 3): ``n_samples`` (reference, α) draws from a seeded plan (Captum's draw order)."""

    n_samples: int
    seed: int
    method: ClassVar[str] = "eg"

    def attribute(self, problem: PathProblem) -> CollectionResult:
        problem.straight_only(self.method, "draws one point per straight path")
        n_refs = len(problem.refs)
        plan = eg_plan(n_refs, self.n_samples, self.seed)
        sums = problem.run(plan)
        draws = plan.draws(n_refs)
        targets = problem.targets
        weights = torch.as_tensor(draws / draws.sum(), dtype=torch.float32, device=problem.ref_widths.device)
        slope = problem.slopes(sums)  # (n, T)
        centred = slope - problem.gap()[plan.ref_index]  # each draw's error: E[.] = 0 (Eq. 3)
        spread = centred.std(axis=0, ddof=1) if len(plan) > 1 else np.full(len(targets), np.inf)
        variation = np.full((n_refs, len(targets)), np.nan)
        for r in np.flatnonzero(draws):
            variation[r] = np.abs(slope[plan.ref_index == r]).mean(axis=0)
        return CollectionResult(
            e=problem.objective.group(sums.e),
            reference_mean=weights @ problem.ref_widths[:, targets],  # (T,) over the sampled refs, Eq. 9
            draws=draws,
            points=np.zeros(n_refs, dtype=np.int64),
            ref_residual=np.zeros((0, len(targets))),
            error_bound=Z_95 * spread / np.sqrt(len(plan)),
            variation=variation,
            exhausted=False,
            nonfinite_refs=_bad_refs(plan, sums.nonfinite),
            grad_evals=sums.grad_evals,
            plan_seed=self.seed,
        )


@dataclass(frozen=True)
class IntegratedGradients(Estimator):
    """IG per reference with quadrature ``rule`` at ``n_points``, equal weights over references.

    Each reference's completeness residual is checked before averaging; with ``adaptive`` a reference above
    ``tolerance`` (for any target) is recomputed with ``refine_factor`` times more points until it passes
    or reaches ``max_points`` (then ``exhausted``).
    """

    rule: str
    n_points: int
    adaptive: bool = False
    tolerance: float = 0.01
    refine_factor: int = 4
    max_points: int = 2048
    method: ClassVar[str] = "ig"

    def attribute(self, problem: PathProblem) -> CollectionResult:
        gap = problem.gap()  # (J, T)
        n_pieces, n_targets = gap.shape
        share = problem.n_paths / n_pieces  # a piece's part of its path's tolerance (1 on straight paths)
        total = problem.zeros()
        points = np.zeros(n_pieces, dtype=np.int64)
        error = np.zeros((n_pieces, n_targets))  # signed: Σ e - exact integral, per piece
        variation = np.zeros((n_pieces, n_targets))
        bad: set[int] = set()
        grad_evals, exhausted = 0, False
        for r in range(n_pieces):
            n = self.n_points
            while True:
                plan = ig_plan(r, self.rule, n)
                sums = problem.run(plan)
                grad_evals += sums.grad_evals
                e_r = problem.objective.group(sums.e)  # (T, L, d)
                error[r] = problem.objective.group(sums.per_ref[r]).cpu().numpy() - gap[r]
                slope = problem.slopes(sums)  # (n, T)
                variation[r] = plan.weight @ np.abs(slope)
                if bool(sums.nonfinite.any()):
                    bad.add(r)
                    break
                if not self.adaptive or np.abs(error[r]).max() <= self.tolerance * share:
                    break
                if n >= self.max_points:
                    exhausted = True
                    break
                n = min(n * self.refine_factor, self.max_points)
            points[r] = n
            total.add_(e_r, alpha=1.0 / problem.n_paths)
        return CollectionResult(
            e=total,
            reference_mean=problem.ref_widths[:, problem.targets].mean(0),
            draws=np.ones(problem.n_paths, dtype=np.int64),
            points=problem.per_path(points),
            ref_residual=np.abs(problem.per_path(error)),
            error_bound=problem.per_path(np.abs(error)).mean(axis=0),
            variation=problem.per_path(variation),
            exhausted=exhausted,
            nonfinite_refs=sorted({problem.path_of(r) for r in bad}),
            grad_evals=grad_evals,
            plan_seed=None,
        )


@dataclass(frozen=True)
class AdaptiveKronrod(Estimator):
    """Adaptive G7/K15 quadrature per reference with one budget per collection (``quadrature.py``): bisects
    where F changes fast until ``spec``'s stopping rule holds; reports ``exhausted`` if ``spec.max_evals``
    ran out first. With ``spec.rule == "trapezoid"`` the intervals are trapezoids between nodes whose
    errors are exact (``trapezoid.py``; straight paths only)."""

    spec: KronrodSpec
    method: ClassVar[str] = "kronrod"

    def attribute(self, problem: PathProblem) -> CollectionResult:
        gap = problem.gap()  # (J, T)
        bad: set[int] = set()  # pieces with a non-finite sample
        if self.spec.rule == "trapezoid":
            report, points = self._trapezoid(problem, bad)
        else:
            report, points = self._k15(problem, gap, bad)
        total = problem.zeros()
        for e_r in report.payload:
            total.add_(e_r.vector if isinstance(e_r, ReadPayload) else e_r, alpha=1.0 / problem.n_paths)
        return CollectionResult(
            e=total,
            reference_mean=problem.ref_widths[:, problem.targets].mean(0),
            draws=np.ones(problem.n_paths, dtype=np.int64),
            points=problem.per_path(points),
            ref_residual=np.abs(problem.per_path(report.integral - gap)),
            error_bound=np.full(len(problem.targets), problem.per_path(report.bound).mean()),
            variation=problem.per_path(report.variation),
            exhausted=report.exhausted,
            nonfinite_refs=sorted({problem.path_of(r) for r in bad}),
            grad_evals=report.evals,
            plan_seed=None,
            trace=report.trace,
        )

    def _k15(self, problem: PathProblem, gap: np.ndarray, bad: set[int]) -> tuple[KronrodReport, np.ndarray]:
        """K15 intervals on each piece (``quadrature.py``): the report and the points of each piece (J,)."""

        read = problem.read if self.spec.reads else None

        def evaluate(ref: int, nodes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, Any]:
            plan = SamplingPlan(np.full(len(nodes), ref, dtype=np.int64), nodes, weights)
            sums = problem.run(plan, split_samples=read is not None)
            if bool(sums.nonfinite.any()):
                bad.add(ref)
            k15 = problem.objective.group(sums.e)  # (T, L, d) K15-weighted
            if read is None:
                return problem.slopes(sums), k15  # (15, T), (T, L, d)
            assert sums.e_per_sample is not None  # split_samples
            g7 = torch.as_tensor(gauss_over_kronrod(), dtype=sums.e.dtype, device=sums.e.device)
            per_node = torch.tensordot(g7, sums.e_per_sample, dims=1)  # (K, L, d) G7-weighted
            return problem.slopes(sums), read.payload(k15, problem.objective.group(per_node))

        # the mean over references of their pieces' summed bounds is J / M times the mean over pieces
        spec = replace(self.spec, tolerance=self.spec.tolerance * problem.n_paths / len(gap))
        integrands, remedy = "references", ""
        if problem.pieces is not None:
            integrands = f"pieces of the block path over {problem.n_paths} references"
            remedy = ": raise it, or attribution.path_block for fewer pieces"
        report = integrate(evaluate, gap, spec, integrands, remedy, read, problem.n_paths)
        return report, report.intervals * NODES_PER_INTERVAL

    def _trapezoid(self, problem: PathProblem, bad: set[int]) -> tuple[KronrodReport, np.ndarray]:
        """Trapezoids between nodes, each interval's error exact (``trapezoid.py``), on straight paths: the
        report and the nodes of each path (M,)."""
        problem.straight_only(self.method, "with kronrod_rule='trapezoid' reads F along straight paths")

        def evaluate(refs: np.ndarray, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
            sums = problem.run(SamplingPlan(refs, alphas, np.ones(len(refs))), split_samples=True)
            bad.update(int(r) for r in refs[sums.nonfinite.cpu().numpy()])
            assert sums.e_per_sample is not None
            vectors = torch.stack([problem.objective.group(v) for v in sums.e_per_sample])  # (n, T, L, d)
            return problem.slopes(sums), problem.path_widths(sums), vectors

        report = trapezoid.integrate(evaluate, problem.ends(), self.spec, problem.samples_per_call)
        return report, report.intervals + 1


@dataclass(frozen=True)
class CertifiedAverage(Estimator):
    """App. B.4 on the averaged attribution (``certified.py``): every reference by a randomly shifted
    tent-transformed lattice rule, doubled where the averaged residual, its spread over the shifts or the
    averaged vector's nested difference fails; ``exhausted`` if ``spec.max_evals`` ran out first. With
    ``spec.warp_points`` the lattice runs on each reference's path warp (``path_warp.py``: points where F
    changes, weighted by the inverse density; its forwards counted apart). Its ``error_bound`` is max(R,
    the spread's 95% half-width) per target; its ``trace`` has ``certified.TRACE_COLUMNS``. Straight paths
    only."""

    spec: CertifiedSpec
    seed: int
    method: ClassVar[str] = "certified"

    def attribute(self, problem: PathProblem) -> CollectionResult:
        problem.straight_only(self.method, "integrates straight paths")
        bad: set[int] = set()

        def weighted(nodes: list[tuple[int, np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, Tensor]]:
            """Every reference's new nodes in one plan: per reference its slopes times the nodes' weights
            (n, T) and its attribution vectors weighted and summed (T, L, d)."""
            index = np.concatenate([np.full(len(alphas), r, dtype=np.int64) for r, alphas, _ in nodes])
            alpha = np.concatenate([alphas for _, alphas, _ in nodes])
            weight = np.concatenate([w for _, _, w in nodes])
            sums = problem.run(SamplingPlan(index, alpha, weight), split_references=True)
            bad.update(int(r) for r in index[sums.nonfinite.cpu().numpy()])
            slopes = problem.slopes(sums) * weight[:, None]
            parts = np.split(slopes, np.cumsum([len(a) for _, a, _ in nodes])[:-1])
            assert sums.e_per_ref is not None
            return [
                (s, problem.objective.group(sums.e_per_ref[r]))
                for s, (r, _, _) in zip(parts, nodes, strict=True)
            ]

        warp, forwards = self.warp(problem)
        report = certify(warp.wrap(weighted), problem.gap(), self.spec, self.seed)
        residual, spread, _ = report.measures  # (T,) each: Eq. 9 on the average, its 95% half-width
        return CollectionResult(
            e=report.vectors.float(),
            reference_mean=problem.ref_widths[:, problem.targets].mean(0),
            draws=np.ones(problem.n_paths, dtype=np.int64),
            points=report.nodes,
            ref_residual=report.residual,
            error_bound=np.maximum(residual, spread),
            variation=report.variation,
            exhausted=report.exhausted,
            nonfinite_refs=sorted(bad),
            grad_evals=report.evals,
            plan_seed=self.seed,
            trace=report.trace,
            forwards=forwards,
        )

    def warp(self, problem: PathProblem) -> tuple[path_warp.Warp, int]:
        """Each reference's path warp (``path_warp.py``) and the forwards it took; none at 0 points."""
        if self.spec.warp_points == 0:
            return path_warp.uniform(problem.n_paths), 0
        ends = problem.ends()  # (M, 2, T): F(B_r), F(X)
        warp = path_warp.fit(problem.values, ends[:, 0], ends[0, 1], self.spec.warp_points)
        return warp, self.spec.warp_points * problem.n_paths
