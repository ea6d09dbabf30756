"""Adaptive Gauss-Kronrod quadrature of M path integrals sharing one budget (the ``kronrod`` estimator).

Each reference r has a scalar integrand per target, g_r(α) = dF/dα = (X - B_r) · ∇F(Z_r(α)) on [0, 1], whose
integral is known exactly by completeness (Eq. 9): ∫ g_r = F(X) - F(B_r) = ``gap[r]``. Each interval [a, b] is
evaluated once with the 15-point Kronrod rule (K15); the 7-point Gauss rule (G7) uses 7 of the same nodes, so
|K15 - G7| is an error estimate that costs nothing extra (QUADPACK's QK15). The estimate is the K15 sum.

Per reference the error bound is ``max(Σ_intervals |K15 - G7|, |Σ K15 - gap|)``: the second term is the exact
scalar error (completeness), so the bound is never below the true residual, and the first catches errors
that cancel in the scalar sum. The question's residual is at most the mean of its references' residuals.
Refinement bisects the worst interval (largest |K15 - G7|; the widest where the estimates are all below the
exact residual, i.e. a feature fell between nodes) of the reference that fails the stopping rule most (its
``lead``), until the rule ``stop`` holds or the next bisection would exceed ``max_evals`` (then ``exhausted``
is set and the caller flags the question). Two rules, each leading its own refinement unless ``lead_rule``
names the other (``attribution.kronrod_lead``: a before-and-after of the two orders under one stop):

- ``bound``: the mean bound is within ``tolerance`` (it also covers per-token errors that cancel in a sum);
  refines the reference with the largest bound;
- ``residual``: App. B.4's rule for complete IG integrals, each reference's exact residual checked before
  averaging: their mean within ``tolerance`` and their maximum within ``RESIDUAL_MAX_FACTOR`` x ``tolerance``
  (the paper's 0.01 and 0.05); refines the reference with the largest residual, so no evaluation goes to a
  reference whose large |K15 - G7| the rule does not ask about. The bound is still computed and reported;
- ``read``: for a caller that reads only the order of a few spans (the swap study's two cues): the order
  of the read groups' magnitudes certain under the per-token |K15 - G7| of the averaged vector, and App.
  B.4's largest residual (``read_order.py``); refines where the deciding pair's error is.

``trace`` records, after the first pass and after each bisection, the evaluations spent, the mean bound, the
mean and maximum per-reference residual, the read margin (``read`` only) and the seconds since the start:
the cost of every tolerance on the way, from one run.

The path's roughness is a by-product: ∫ |g_r| (the total variation of F along the path, K15 on |g|) against
|gap|. A pure function of an ``evaluate`` callback, so it is tested on analytic integrands
(tests/attribution/test_quadrature.py) and driven by the gradient loop in ``estimators.py``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xurs_pipeline.attribution.config import INTERVAL_RULES, LEAD_RULES, STOP_RULES
from xurs_pipeline.attribution.read_order import ReadCheck, ReadGroups
from xurs_pipeline.errors import XursError

# QUADPACK qk15 on [-1, 1]: Kronrod nodes (the odd-indexed ones are the 7 Gauss-Legendre nodes) and weights.
_K15_NODES = np.array([
    -0.991455371120812639206854697526329, -0.949107912342758524526189684047851,
    -0.864864423359769072789712788640926, -0.741531185599394439863864773280788,
    -0.586087235467691130294144838258730, -0.405845151377397166906606412076961,
    -0.207784955007898467600689403773245, 0.0,
    0.207784955007898467600689403773245, 0.405845151377397166906606412076961,
    0.586087235467691130294144838258730, 0.741531185599394439863864773280788,
    0.864864423359769072789712788640926, 0.949107912342758524526189684047851,
    0.991455371120812639206854697526329,
])  # fmt: skip
_K15_WEIGHTS = np.array([
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714,
    0.204432940075298892414161999234649, 0.190350578064785409913256402421014,
    0.169004726639267902826583426598550, 0.140653259715525918745189590510238,
    0.104790010322250183839876322541518, 0.063092092629978553290700663189204,
    0.022935322010529224963732008058970,
])  # fmt: skip
_G7_WEIGHTS = np.zeros(15)
_G7_WEIGHTS[1::2] = [
    0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
    0.381830050505118944950369775488975, 0.417959183673469387755102040816327,
    0.381830050505118944950369775488975, 0.279705391489276667901467771423780,
    0.129484966168869693270611432679082,
]  # fmt: skip
NODES_PER_INTERVAL = len(_K15_NODES)
MIN_WIDTH = 2.0**-24  # narrower intervals are not bisected further (float32 α resolution)
RESIDUAL_MAX_FACTOR = 5.0  # App. B.4: maximum per-reference residual 0.05 beside the mean's 0.01
# read_margin: ``read_order.py``'s margin of the read groups' order (NaN under the other stopping rules)
TRACE_COLUMNS = ("evals", "mean_bound", "mean_residual", "max_residual", "read_margin", "seconds")


def gauss_over_kronrod() -> np.ndarray:
    """(15,) each node's G7 weight over its K15 weight (0 off the Gauss nodes), the same on every interval:
    a K15-weighted sample times it is G7-weighted."""
    ratio: np.ndarray = _G7_WEIGHTS / _K15_WEIGHTS
    return ratio


def kronrod_rule(a: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(nodes (15,), K15 weights (15,), G7 weights (15,), zero off the Gauss nodes) on [a, b]."""
    half = (b - a) / 2.0
    return a + half * (_K15_NODES + 1.0), half * _K15_WEIGHTS, half * _G7_WEIGHTS


@dataclass
class Interval:
    """One leaf [a, b] of reference ``ref``: K15 and G7 integrals and ∫|g| per target (T,), and the
    caller's payload (e.g. the K15-weighted attribution vector of the interval)."""

    ref: int
    a: float
    b: float
    kronrod: np.ndarray
    gauss: np.ndarray
    variation: np.ndarray
    payload: Any

    @property
    def error(self) -> float:
        """|K15 - G7|, the largest over targets."""
        return float(np.abs(self.kronrod - self.gauss).max())


# evaluate(ref, nodes (15,), K15 weights (15,)) -> (slopes (15, T), payload): dF_t/dα at the nodes and the
# caller's K15-weighted payload of the interval (anything supporting + and -, or None).
Evaluate = Callable[[int, np.ndarray, np.ndarray], tuple[np.ndarray, Any]]


class BudgetError(XursError, ValueError):
    """``attribution.kronrod_max_evals`` is below the first pass (15 nodes x intervals x paths)."""


@dataclass(frozen=True)
class KronrodSpec:
    """tolerance: target of the mean per-reference bound (bounds the question's residual, Eq. 9), or with
    ``stop="residual"`` of the mean per-reference residual (App. B.4).
    max_evals: gradient evaluations the collection may spend (15 per interval).
    initial_intervals: equal intervals per reference to start with.
    stop: the stopping rule, one of ``STOP_RULES`` (module docstring).
    lead_rule: the rule whose failure orders the refinement, one of ``LEAD_RULES`` (``stop``: ``stop``'s).
    rule: the rule on each interval, one of ``INTERVAL_RULES``: ``k15`` (this module) or ``trapezoid``
      (``trapezoid.py``: two nodes an interval, its error exact; the same stopping and lead rules)."""

    tolerance: float = 0.01
    max_evals: int = 4096
    initial_intervals: int = 1
    stop: str = "bound"
    lead_rule: str = "stop"
    rule: str = "k15"

    def __post_init__(self) -> None:
        if not self.tolerance > 0:
            raise ValueError(f"attribution.kronrod_tolerance={self.tolerance}: must be positive")
        if self.initial_intervals < 1:
            raise ValueError(f"attribution.kronrod_intervals={self.initial_intervals}: must be >= 1")
        if self.stop not in STOP_RULES:
            raise ValueError(f"attribution.kronrod_stop={self.stop!r}: must be one of {list(STOP_RULES)}")
        if self.lead_rule not in LEAD_RULES:
            raise ValueError(
                f"attribution.kronrod_lead={self.lead_rule!r}: must be one of {list(LEAD_RULES)}"
            )
        if self.rule not in INTERVAL_RULES:
            raise ValueError(f"attribution.kronrod_rule={self.rule!r}: must be one of {list(INTERVAL_RULES)}")
        if self.reads and self.rule != "k15":
            raise ValueError(
                f"attribution.kronrod_stop/kronrod_lead='read' compares each interval's K15 with its G7: it "
                f"needs kronrod_rule='k15' (got {self.rule!r})"
            )

    def met(self, mean_bound: Any, mean_residual: Any, max_residual: Any, read_margin: Any = np.nan) -> Any:
        """Whether the stopping rule holds, from a step's mean bound, mean and largest per-reference
        residual and read margin (the ``trace`` columns): scalars give a bool, arrays (steps,) a mask."""
        if self.stop == "bound":
            return np.asarray(mean_bound) <= self.tolerance
        largest = np.asarray(max_residual) <= RESIDUAL_MAX_FACTOR * self.tolerance
        if self.stop == "read":  # read_order.py: the order certain, App. B.4's largest residual
            return (np.asarray(read_margin) > 0) & largest
        return (np.asarray(mean_residual) <= self.tolerance) & largest

    @property
    def leading(self) -> str:
        """The rule whose failure orders the refinement (``lead_rule``, or ``stop``'s own)."""
        return self.stop if self.lead_rule == "stop" else self.lead_rule

    @property
    def reads(self) -> bool:
        """Whether the ``read`` rule stops or leads (``read_order.py``: it needs the read groups)."""
        return "read" in (self.stop, self.leading)

    def lead(self, bound: np.ndarray, residual: np.ndarray) -> np.ndarray:
        """How far each reference is from the rule (M,), the order in which to refine them: its error bound
        (``bound``, (M,)) or its largest residual over targets (``residual``, (M,)), as ``lead_rule`` says
        (``read`` is led in :func:`integrate`, which holds the read groups)."""
        return bound if self.leading == "bound" else residual


@dataclass
class KronrodReport:
    """Result of :func:`integrate` over M references and T targets.

    integral (M, T): Σ K15 per reference.  residual (M, T): |integral - gap|, the exact scalar error.
    estimate (M, T): Σ_intervals |K15 - G7|.  bound (M,): max over targets of max(estimate, residual).
    variation (M, T): ∫|g| (total variation of F along the path).  intervals (M,): leaves per reference.
    payload: the sum of the leaves' payloads per reference (list of M; the trapezoid's: each reference's
    attribution vectors (T, ...), ``trapezoid.py``).  evals: integrand evaluations.
    exhausted: the budget ran out before the stopping rule held.
    trace (steps, 5): ``TRACE_COLUMNS`` after the first pass and after each bisection.
    """

    integral: np.ndarray
    residual: np.ndarray
    estimate: np.ndarray
    bound: np.ndarray
    variation: np.ndarray
    intervals: np.ndarray
    payload: list[Any]
    evals: int
    exhausted: bool
    trace: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, len(TRACE_COLUMNS))))
    leaves: list[list[Interval]] = field(repr=False, default_factory=list)


def _interval(evaluate: Evaluate, ref: int, a: float, b: float) -> Interval:
    nodes, wk, wg = kronrod_rule(a, b)
    slopes, payload = evaluate(ref, nodes, wk)
    slopes = np.asarray(slopes, dtype=np.float64).reshape(NODES_PER_INTERVAL, -1)  # (15, T)
    return Interval(ref, a, b, wk @ slopes, wg @ slopes, wk @ np.abs(slopes), payload)


def _summary(leaves: list[list[Interval]], gap: np.ndarray) -> tuple[np.ndarray, ...]:
    integral = np.stack([sum(i.kronrod for i in ls) for ls in leaves])  # (M, T)
    estimate = np.stack([sum(np.abs(i.kronrod - i.gauss) for i in ls) for ls in leaves])
    residual = np.abs(integral - gap)
    bound = np.maximum(estimate, residual).max(axis=1)  # (M,)
    return integral, estimate, residual, bound


IntervalError = Callable[[Interval], float]  # what a leaf's error is judged by


def _scalar_error(interval: Interval) -> float:
    return interval.error


def _worst(intervals: list[Interval], residual: float, error: IntervalError = _scalar_error) -> int | None:
    """Index of the leaf to bisect: the largest ``error`` (|K15 - G7|), or the widest when the estimates
    together fall short of the exact residual (a feature between nodes); None if every leaf is at
    MIN_WIDTH."""
    splittable = [k for k, i in enumerate(intervals) if i.b - i.a > 2 * MIN_WIDTH]
    if not splittable:
        return None
    if sum(intervals[k].error for k in splittable) < residual:
        return max(splittable, key=lambda k: (intervals[k].b - intervals[k].a, intervals[k].error))
    return max(splittable, key=lambda k: error(intervals[k]))


def _next_bisection(
    leaves: list[list[Interval]], lead: np.ndarray, residual: np.ndarray, error: IntervalError = _scalar_error
) -> tuple[int, int] | None:
    """(integrand, leaf) to bisect next: in the integrand of the largest ``lead`` (M,) that still has a leaf
    above the resolution limit, its worst leaf (:func:`_worst`, against its residual (M,)); None when none
    is left."""
    for r in np.argsort(-lead, kind="stable"):
        k = _worst(leaves[r], float(residual[r]), error)
        if k is not None:
            return int(r), k
    return None


def _summed_payload(leaves: list[Interval]) -> Any:
    """The sum of the leaves' payloads (None if any leaf has none)."""
    total = leaves[0].payload
    for i in leaves[1:]:
        total = total + i.payload if total is not None else None
    return total


def _first_pass(
    evaluate: Evaluate, n_refs: int, spec: KronrodSpec, integrands: str, remedy: str
) -> tuple[list[list[Interval]], int]:
    """Each of the ``n_refs`` integrands over ``spec.initial_intervals`` equal intervals of [0, 1], and the
    evaluations spent; a budget below them is a :class:`BudgetError` (see :func:`integrate`)."""
    edges = np.linspace(0.0, 1.0, spec.initial_intervals + 1)
    cost = NODES_PER_INTERVAL * spec.initial_intervals * n_refs
    if cost > spec.max_evals:
        raise BudgetError(
            f"attribution.kronrod_max_evals={spec.max_evals}: below the first pass's {cost} evaluations "
            f"({n_refs} {integrands} x {spec.initial_intervals} interval(s) x {NODES_PER_INTERVAL} nodes)"
            f"{remedy}"
        )
    leaves = [
        [_interval(evaluate, r, float(a), float(b)) for a, b in itertools.pairwise(edges)]
        for r in range(n_refs)
    ]
    return leaves, cost


def _bisect(evaluate: Evaluate, leaves: list[list[Interval]], r: int, k: int) -> None:
    """Replace integrand ``r``'s interval ``k`` by its two halves (2 x 15 new evaluations)."""
    parent = leaves[r].pop(k)
    mid = (parent.a + parent.b) / 2.0
    leaves[r].extend([_interval(evaluate, r, parent.a, mid), _interval(evaluate, r, mid, parent.b)])


# refine(bound (M,), largest residual over targets (M,), evaluations so far) -> evaluations it spent, or None
# when it cannot go on (the budget, or every interval at the resolution limit)
Refine = Callable[[np.ndarray, np.ndarray, int], int | None]


def refine_until(
    spec: KronrodSpec,
    check: Callable[[], tuple[np.ndarray, np.ndarray]],
    refine: Refine,
    evals: int,
    read_margin: Callable[[], float] | None = None,
) -> tuple[int, bool, np.ndarray]:
    """The adaptive loop both interval rules share: ``check`` gives the references' bounds (M,) and
    residuals (M, T), ``read_margin`` the read groups' margin (``read`` only); stop where ``spec``'s rule
    holds, else ``refine``. Returns (evaluations, exhausted, trace (steps, ``TRACE_COLUMNS``): after the
    first pass and after each refinement)."""
    start, trace = time.perf_counter(), []
    while True:
        bound, residual = check()
        per_ref = residual.max(axis=1)
        margin = np.nan if read_margin is None else read_margin()
        step = (evals, bound.mean(), per_ref.mean(), per_ref.max(), margin, time.perf_counter() - start)
        trace.append(step)
        if spec.met(*step[1:5]):
            return evals, False, np.array(trace, dtype=np.float64)
        spent = refine(bound, per_ref, evals)
        if spent is None:
            return evals, True, np.array(trace, dtype=np.float64)
        evals += spent


def integrate(
    evaluate: Evaluate,
    gap: np.ndarray,
    spec: KronrodSpec,
    integrands: str = "references",
    remedy: str = "",
    read: ReadGroups | None = None,
    n_paths: int | None = None,
) -> KronrodReport:
    """Adaptive G7/K15 quadrature of M integrands on [0, 1] whose exact integrals are ``gap`` (M, T).

    A budget below the first pass is a :class:`BudgetError` that names the ``integrands`` (what the M are)
    and ends with ``remedy``. Under the ``read`` rule (stopping or leading) ``read`` holds the groups and
    every payload is a ``read_order.ReadPayload``; ``n_paths``: the references the averaged vector divides
    by (default M: one integrand a reference)."""
    gap = np.asarray(gap, dtype=np.float64).reshape(len(gap), -1)
    if spec.reads and read is None:
        raise ValueError("attribution.kronrod_stop/kronrod_lead='read' needs the read groups of the question")
    leaves, first = _first_pass(evaluate, len(gap), spec, integrands, remedy)
    state: list[tuple[ReadCheck, list[Any]]] = []  # the last read check, and each integrand's summed payload

    def check() -> tuple[np.ndarray, np.ndarray]:
        _, _, residual, bound = _summary(leaves, gap)
        return bound, residual

    def read_margin() -> float:
        assert read is not None
        sums = [_summed_payload(ls) for ls in leaves]
        state[:] = [(read.check(sums, n_paths or len(gap)), sums)]
        return state[0][0].margin

    def order(bound: np.ndarray, per_ref: np.ndarray) -> tuple[np.ndarray, IntervalError]:
        """The refinement's order (M,) and what a leaf's error is judged by: ``spec.lead``'s; under ``read``
        the deciding pair's error while the order is not certain, else the residual (what is left)."""
        if spec.leading != "read":
            return spec.lead(bound, per_ref), _scalar_error
        assert read is not None
        last, sums = state[0]
        if last.margin > 0:
            return per_ref, _scalar_error
        lead = np.array([read.pair_error(total, last.pair) for total in sums])
        return lead, lambda i: read.pair_error(i.payload, last.pair)

    def refine(bound: np.ndarray, per_ref: np.ndarray, evals: int) -> int | None:
        if evals + 2 * NODES_PER_INTERVAL > spec.max_evals:
            return None
        lead, error = order(bound, per_ref)
        choice = _next_bisection(leaves, lead, per_ref, error)
        if choice is None:  # every interval at the resolution limit
            return None
        _bisect(evaluate, leaves, *choice)
        return 2 * NODES_PER_INTERVAL

    margin = read_margin if spec.reads else None
    evals, exhausted, steps = refine_until(spec, check, refine, first, margin)
    integral, estimate, residual, bound = _summary(leaves, gap)
    payload = [_summed_payload(ls) for ls in leaves]
    variation = np.stack([sum(i.variation for i in ls) for ls in leaves])
    counts = np.array([len(ls) for ls in leaves])
    return KronrodReport(
        integral, residual, estimate, bound, variation, counts, payload, evals, exhausted, steps, leaves
    )
