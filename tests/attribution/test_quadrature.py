"""Adaptive G7/K15 quadrature (attribution/quadrature.py) on analytic integrands, checked against scipy."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate as sp_integrate
from scipy.special import expit

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.methods import method_for
from xurs_pipeline.attribution.quadrature import (
    NODES_PER_INTERVAL,
    KronrodSpec,
    integrate,
    kronrod_rule,
)
from xurs_pipeline.config import KRONROD_REPEAT_INTERVALS


def _evaluate(slope):
    """An ``Evaluate`` for a scalar slope(ref, alpha): the payload is the K15-weighted node vector (what the
    engine's attribution vector is), so its sum must equal the integral."""

    def evaluate(ref: int, nodes: np.ndarray, weights: np.ndarray):
        g = np.array([slope(ref, a) for a in nodes])
        return g[:, None], np.array([weights @ g])

    return evaluate


def _integral(f, a=0.0, b=1.0):
    """F(b) - F(a) by scipy (for slopes given as derivatives, the exact gap)."""
    return f(b) - f(a)


def test_rule_is_exact_for_polynomials_and_gauss_part_is_gauss_legendre():
    nodes, wk, wg = kronrod_rule(0.0, 1.0)
    for degree in range(23):  # K15 is exact up to degree 22, G7 up to 13
        assert wk @ nodes**degree == pytest.approx(1.0 / (degree + 1), rel=1e-13, abs=1e-15)
    for degree in range(14):
        assert wg @ nodes**degree == pytest.approx(1.0 / (degree + 1), rel=1e-13, abs=1e-15)
    assert wg @ nodes**14 != pytest.approx(1.0 / 15, rel=1e-9)  # G7 is not exact beyond 13
    gl_nodes, gl_weights = np.polynomial.legendre.leggauss(7)
    np.testing.assert_allclose(nodes[1::2], (gl_nodes + 1) / 2, atol=1e-15)
    np.testing.assert_allclose(wg[1::2], gl_weights / 2, atol=1e-15)


def test_smooth_integrand_matches_scipy_and_stops_after_one_pass():
    slope = lambda r, a: np.cos(3 * a + r) * (1 + a**2)  # noqa: E731
    exact = [sp_integrate.quad(lambda a, r=r: slope(r, a), 0, 1, epsabs=1e-14)[0] for r in range(3)]
    report = integrate(_evaluate(slope), np.array(exact)[:, None], KronrodSpec(tolerance=1e-8))
    np.testing.assert_allclose(report.integral[:, 0], exact, atol=1e-12)
    assert report.evals == 3 * NODES_PER_INTERVAL
    assert not report.exhausted


def test_linear_path_stops_early():
    """F linear in α (constant slope): the first K15 pass is exact, no bisection."""
    report = integrate(_evaluate(lambda r, a: 0.3 + r), np.array([[0.3], [1.3]]), KronrodSpec(1e-12))
    assert report.evals == 2 * NODES_PER_INTERVAL
    assert report.intervals.tolist() == [1, 1]
    assert not report.exhausted
    assert report.residual.max() < 1e-14


@pytest.mark.parametrize("steepness", [200.0, 2000.0])
def test_sharp_sigmoid_step_reaches_tolerance_and_bound_holds(steepness):
    """F(α) = sigmoid(s (α - c)): a jump of almost 1 in a window of width ~1/s, as on training-reference
    paths. One pass misses it; the adaptive rule must refine near c and end within the tolerance, with a
    bound no smaller than the true error of the vector payload and the integral equal to dense quadrature."""
    centres = [0.37, 0.8123]
    F = lambda r, a: expit(steepness * (a - centres[r]))  # noqa: E731
    slope = lambda r, a: steepness * F(r, a) * (1 - F(r, a))  # noqa: E731
    gap = np.array([[_integral(lambda a, r=r: F(r, a))] for r in range(2)])
    tol = 1e-6
    report = integrate(_evaluate(slope), gap, KronrodSpec(tolerance=tol, max_evals=20_000))
    assert not report.exhausted
    assert report.bound.mean() <= tol
    dense = [
        sp_integrate.quad(lambda a, r=r: slope(r, a), 0, 1, points=[centres[r]], epsabs=1e-13, limit=200)[0]
        for r in range(2)
    ]
    true_error = np.abs(np.array([p[0] for p in report.payload]) - dense)
    assert np.all(true_error <= report.bound + 1e-12)
    assert np.all(report.residual[:, 0] <= tol)
    assert report.intervals.min() > 1  # it had to bisect
    # the bisection concentrates where F changes: the smallest leaf contains the step
    for r, leaves in enumerate(report.leaves):
        smallest = min(leaves, key=lambda i: i.b - i.a)
        assert abs((smallest.a + smallest.b) / 2 - centres[r]) < 0.1
    # roughness: a monotone step has total variation equal to its net change
    np.testing.assert_allclose(report.variation[:, 0], np.abs(gap[:, 0]), rtol=1e-4)


def test_oscillating_path_reports_total_variation_above_net_change():
    """F(α) = sin(6πα) + α: net change 1, total variation ≈ 12 (scipy on |F'|). The partition is refined for
    ∫g, not ∫|g| (whose kinks converge slowly), so the by-product is an estimate: within 2% here."""
    slope = lambda r, a: 6 * np.pi * np.cos(6 * np.pi * a) + 1  # noqa: E731
    report = integrate(_evaluate(slope), np.array([[1.0]]), KronrodSpec(tolerance=1e-9, max_evals=5000))
    tv = sp_integrate.quad(lambda a: abs(slope(0, a)), 0, 1, limit=200, epsabs=1e-12)[0]
    assert report.variation[0, 0] == pytest.approx(tv, rel=2e-2)
    assert report.variation[0, 0] > 10 * report.integral[0, 0]


def test_budget_exhausted_is_flagged():
    F = lambda a: expit(5000 * (a - 0.61))  # noqa: E731
    slope = lambda r, a: 5000 * F(a) * (1 - F(a))  # noqa: E731
    report = integrate(_evaluate(slope), np.array([[_integral(F)]]), KronrodSpec(1e-6, max_evals=45))
    assert report.exhausted
    assert report.evals <= 45
    assert report.bound.mean() > 1e-6


def test_feature_between_nodes_is_caught_by_the_exact_residual():
    """A bump narrower than the node spacing that no node of the first pass touches: K15 and G7 agree (0),
    but completeness says the integral is 1, so the reference is refined anyway and ends at the tolerance."""
    width = 1e-4
    centre = 0.5 + 0.5 * (1 + 0.0) / 2 * 0.05  # between the first pass's nodes
    nodes, _, _ = kronrod_rule(0.0, 1.0)
    assert np.min(np.abs(nodes - centre)) > 20 * width
    slope = lambda r, a: np.exp(-0.5 * ((a - centre) / width) ** 2) / (width * np.sqrt(2 * np.pi))  # noqa: E731
    report = integrate(_evaluate(slope), np.array([[1.0]]), KronrodSpec(1e-6, max_evals=20_000))
    assert not report.exhausted
    assert report.residual[0, 0] <= 1e-6


def test_spec_and_budget_checks():
    with pytest.raises(ValueError, match="kronrod_tolerance"):
        KronrodSpec(tolerance=0)
    with pytest.raises(ValueError, match="kronrod_max_evals"):
        integrate(_evaluate(lambda r, a: 1.0), np.ones((4, 1)), KronrodSpec(max_evals=59))


def _sigmoid_steps(steepness: float = 300.0, centres: tuple[float, ...] = (0.37, 0.8123, 0.55)):
    """Steep steps at ``centres``, one per reference: (evaluate, gap (M, 1))."""
    F = lambda r, a: expit(steepness * (a - centres[r]))  # noqa: E731
    slope = lambda r, a: steepness * F(r, a) * (1 - F(r, a))  # noqa: E731
    gap = np.array([[F(r, 1.0) - F(r, 0.0)] for r in range(len(centres))])
    return _evaluate(slope), gap


def test_trace_records_every_step_and_ends_at_the_report():
    evaluate, gap = _sigmoid_steps()
    report = integrate(evaluate, gap, KronrodSpec(1e-4, max_evals=20_000))
    evals, mean_bound, mean_residual, max_residual, read_margin, seconds = report.trace.T
    assert np.all(np.diff(seconds) >= 0)
    assert evals[0] == 3 * NODES_PER_INTERVAL
    np.testing.assert_array_equal(np.diff(evals), 2 * NODES_PER_INTERVAL)  # one bisection a step
    assert evals[-1] == report.evals
    assert mean_bound[-1] == pytest.approx(report.bound.mean())
    assert mean_bound[-1] <= 1e-4
    assert mean_bound[0] > 1e-4  # one pass was not enough
    np.testing.assert_allclose(mean_residual[-1], report.residual.max(axis=1).mean())
    assert np.all(max_residual >= mean_residual)
    assert np.all(mean_bound >= mean_residual)
    assert np.all(np.isnan(read_margin))  # the bound rule reads no groups


def test_residual_rule_meets_app_b4_and_reports_its_bound():
    """The ``residual`` run stops once App. B.4's rule holds (mean per-reference residual within the
    tolerance, the largest within 5x), before the ``bound`` run ends, and its bound, reported, is still never
    below its true residual."""
    evaluate, gap = _sigmoid_steps()
    tol = 1e-3
    full = integrate(evaluate, gap, KronrodSpec(tol, max_evals=20_000, stop="bound"))
    early = integrate(evaluate, gap, KronrodSpec(tol, max_evals=20_000, stop="residual"))
    assert early.evals < full.evals
    assert not early.exhausted
    per_ref = early.residual.max(axis=1)
    assert per_ref.mean() <= tol
    assert per_ref.max() <= 5 * tol
    assert np.all(early.bound >= per_ref)
    assert early.bound.mean() > tol  # the per-token estimate was not required, and says so


def _exact_but_rough_and_a_step():
    """Reference 0: a degree-22 polynomial slope, integrated exactly by K15 (residual ~1e-13) but far from G7
    (a large |K15 - G7| bound); reference 1: a steep step K15 misses. (recording evaluate, gap (2, 1), the
    references in the order they were evaluated)."""
    step = lambda a: expit(300.0 * (a - 0.37))  # noqa: E731
    slopes = [lambda a: 1e4 * 23 * a**22, lambda a: 300.0 * step(a) * (1 - step(a))]
    gap = np.array([[1e4], [step(1.0) - step(0.0)]])
    calls: list[int] = []
    inner = _evaluate(lambda r, a: slopes[r](a))

    def evaluate(ref, nodes, weights):
        calls.append(ref)
        return inner(ref, nodes, weights)

    return evaluate, gap, calls


def test_each_rule_refines_the_reference_that_fails_it():
    """Under the residual rule every bisection goes to the reference whose residual fails App. B.4 (the
    step), none to the exactly integrated polynomial whose |K15 - G7| is large; under the bound rule that
    polynomial is refined first, so the bound-led order meets App. B.4 later than the residual-led one."""
    tol = 1e-3
    evaluate, gap, calls = _exact_but_rough_and_a_step()
    residual_led = integrate(evaluate, gap, KronrodSpec(tol, max_evals=20_000, stop="residual"))
    assert calls[:2] == [0, 1]  # the first pass
    assert set(calls[2:]) == {1}
    assert residual_led.intervals.tolist()[0] == 1
    assert residual_led.residual.max(axis=1).mean() <= tol
    evaluate, gap, calls = _exact_but_rough_and_a_step()
    bound_led = integrate(evaluate, gap, KronrodSpec(tol, max_evals=20_000, stop="bound"))
    assert calls[2] == 0  # the bound rule spends its first bisection on the polynomial
    evals, mean_bound, mean_residual, max_residual, _, _ = bound_led.trace.T
    met = KronrodSpec(tol, stop="residual").met(mean_bound, mean_residual, max_residual)
    assert evals[int(np.argmax(met))] > residual_led.evals


@pytest.mark.parametrize(("lead", "first_bisected"), [("bound", 0), ("residual", 1), ("stop", 1)])
def test_the_lead_key_orders_refinement_whatever_the_stop(lead, first_bisected):
    """``attribution.kronrod_lead`` under the residual stop: ``bound`` bisects the exactly integrated
    polynomial (largest bound) first, in the bound rule's own order up to the residual rule's stop;
    ``residual`` and ``stop`` (the default: the stopping rule's) only the step. The stop is the residual
    rule's each time; the config key reaches the estimator (``method_for(cfg).settings.estimator``)."""
    tol = 1e-3
    evaluate, gap, calls = _exact_but_rough_and_a_step()
    report = integrate(evaluate, gap, KronrodSpec(tol, max_evals=20_000, stop="residual", lead_rule=lead))
    assert calls[2] == first_bisected
    assert report.residual.max(axis=1).mean() <= tol
    assert not report.exhausted
    evaluate, gap, bound_calls = _exact_but_rough_and_a_step()
    integrate(evaluate, gap, KronrodSpec(tol, max_evals=20_000, stop="bound"))
    assert (bound_calls[: len(calls)] == calls) is (lead == "bound")
    if lead != "bound":
        assert set(calls[2:]) == {1}
    cfg = AttributionConfig(method="kronrod", kronrod_stop="residual", kronrod_lead=lead)
    assert method_for(cfg).settings.estimator(0).spec == KronrodSpec(0.01, 8192, 1, "residual", lead)


@pytest.mark.parametrize(
    ("residuals", "met"),
    [
        ([0.001, 0.019], True),  # mean 0.01, largest 0.019
        ([0.0, 0.021], False),  # mean 0.0105
        ([0.0] * 9 + [0.06], False),  # mean 0.006, but one reference above 0.05
        ([0.0] * 9 + [0.05], True),
    ],
)
def test_residual_rule_checks_each_reference_before_averaging(residuals, met):
    spec = KronrodSpec(0.01, stop="residual")
    residual = np.array(residuals)
    step = (1.0, residual.mean(), residual.max())  # a mean bound of 1.0 and the references' residuals
    assert bool(spec.met(*step)) is met
    assert bool(KronrodSpec(0.01).met(*step)) is False  # the bound rule: 1.0


def test_unknown_stop_rule_names_the_key():
    with pytest.raises(ValueError, match="kronrod_stop"):
        KronrodSpec(stop="median")
    with pytest.raises(ValueError, match="kronrod_lead='median'"):
        KronrodSpec(lead_rule="median")


def test_a_repeat_from_three_times_the_intervals_shares_no_interval_with_the_main_run():
    """App. B.4's second run of the deterministic kronrod (``config.repeat_config``): started from twice the
    intervals it begins at the main run's first bisection and refines to the very same intervals, so its
    per-token vector equals the main run's (a check that cannot fail); from three times the intervals no
    interval is shared and the vector is another estimate of the same integrals."""

    def per_token(alpha: float) -> np.ndarray:  # two tokens, each a sharp swing of its own
        s1, s2 = expit(60 * (alpha - 0.37)), expit(40 * (alpha - 0.61))
        return np.array([60 * s1 * (1 - s1), -0.5 * 40 * s2 * (1 - s2)])

    def evaluate(ref: int, nodes: np.ndarray, weights: np.ndarray):
        per = np.array([per_token(a) for a in nodes])  # (15, 2)
        return per.sum(1, keepdims=True), weights @ per

    exact = np.array([expit(60 * 0.63) - expit(-60 * 0.37), -0.5 * (expit(40 * 0.39) - expit(-40 * 0.61))])
    spec = KronrodSpec(tolerance=0.01, max_evals=4096, stop="residual")

    def run(intervals: int):
        report = integrate(evaluate, np.array([[exact.sum()]]), replace(spec, initial_intervals=intervals))
        assert not report.exhausted
        assert report.residual.max() <= 0.01
        return {(i.a, i.b) for i in report.leaves[0]}, report.payload[0]

    main_leaves, main_vector = run(1)
    assert len(main_leaves) > 2  # the main run refined beyond its first bisection
    twice_leaves, twice_vector = run(2)
    assert twice_leaves == main_leaves
    np.testing.assert_array_equal(twice_vector, main_vector)
    thrice_leaves, thrice_vector = run(KRONROD_REPEAT_INTERVALS)
    assert not thrice_leaves & main_leaves
    assert not np.array_equal(thrice_vector, main_vector)
    np.testing.assert_allclose(thrice_vector, exact, atol=0.01)
