"""The ``certified`` rule (attribution/certified.py) on closed-form integrands with known per-token integrals:
its lattice (nested, unbiased, second order), its certificate at M = 256 (the split, not only the sum), a
budget too small to certify (flagged), and its budget error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xurs_pipeline.attribution.certified import CertifiedSpec, Failing, _next_round, certify, tent_nodes
from xurs_pipeline.attribution.quadrature import BudgetError
from xurs_pipeline.errors import XursError


class SineTokens:
    """M references x L tokens: token i of reference r moves along the path as c_i α + a_ri sin(w_ri α +
    p_ri), so its attribution slope is c_i + a_ri w_ri cos(w_ri α + p_ri) and its integral c_i + a_ri
    (sin(w_ri + p_ri) - sin p_ri) exactly: a per-token effect c_i shared by the references under each
    reference's own swings. ``rough`` scales the frequencies (w up to 2π x rough)."""

    def __init__(self, refs: int, tokens: int, rough: float, seed: int = 0, amplitude: float = 0.05) -> None:
        rng = np.random.default_rng(seed)
        self.c = rng.normal(0.0, 0.1, tokens)
        self.a = rng.normal(0.0, amplitude, (refs, tokens))
        self.w = rng.uniform(0.5, 2 * np.pi * rough, (refs, tokens))
        self.p = rng.uniform(0.0, 2 * np.pi, (refs, tokens))
        self.calls = self.evals = 0

    def exact(self) -> np.ndarray:
        """Per-reference, per-token integrals (M, L)."""
        return self.c + self.a * (np.sin(self.w + self.p) - np.sin(self.p))

    def gap(self) -> np.ndarray:
        return self.exact().sum(1)[:, None]  # (M, 1): one target

    def __call__(self, nodes: list[tuple[int, np.ndarray]]) -> list[tuple[np.ndarray, torch.Tensor]]:
        self.calls += 1
        self.evals += sum(len(alphas) for _, alphas in nodes)
        return [self.one(ref, alphas) for ref, alphas in nodes]

    def one(self, ref: int, alphas: np.ndarray) -> tuple[np.ndarray, torch.Tensor]:
        a, w, p = self.a[ref], self.w[ref], self.p[ref]
        per_token = self.c + a * w * np.cos(w * alphas[:, None] + p)  # (n, L)
        return per_token.sum(1, keepdims=True), torch.tensor(per_token.sum(0)[None, :])  # (n, 1), (1, L)


def test_tent_lattice_is_nested_and_unbiased_and_second_order() -> None:
    """Doubling keeps every node; the mean over shifts of a 2-point rule is the integral (unbiased) while a
    fixed shift is off; the RMS error over shifts falls 4x per doubling on a smooth integrand."""
    shift = 0.3141
    for n in (2, 4, 8, 16):
        coarse, added = set(np.round(tent_nodes(shift, n), 12)), tent_nodes(shift, 2 * n, odd_only=True)
        assert coarse | set(np.round(added, 12)) == set(np.round(tent_nodes(shift, 2 * n), 12))
        assert len(added) == n

    def g(x):
        return np.exp(3 * x)

    exact = (np.exp(3) - 1) / 3
    shifts = (np.arange(20000) + 0.5) / 20000
    means = np.array([g(tent_nodes(u, 2)).mean() for u in shifts])
    assert means.mean() == pytest.approx(exact, rel=1e-6)
    assert abs(means[0] - exact) > 0.1 * exact  # one shift alone is far off: unbiased only on average
    draws = np.random.default_rng(0).uniform(size=400)
    rms = [np.sqrt(np.mean([(g(tent_nodes(u, n)).mean() - exact) ** 2 for u in draws])) for n in (8, 16, 32)]
    ratios = np.array(rms[:-1]) / np.array(rms[1:])
    assert np.all(ratios > 3.5)
    assert np.all(ratios < 4.5)


def test_certificate_at_256_references_holds_for_the_sum_and_the_split() -> None:
    """M = 256 references, 12 tokens, paths of up to one oscillation: the rule stops within its budget with
    the averaged residual exactly as recomputed, within 0.01, and the averaged per-token vector within 0.10
    relative distance and 0.99 cosine of the exact per-token averages (the split, not only the sum)."""
    f = SineTokens(256, 12, rough=1.0)
    spec = CertifiedSpec(tolerance=0.01, vector_tolerance=0.05, max_evals=2048)
    report = certify(f, f.gap(), spec, seed=7)
    assert not report.exhausted
    assert report.evals == f.evals <= 2048
    assert f.calls < 20  # batched: the first pass in two calls, then one call a round
    assert report.evals > 512  # the first pass alone did not meet it: it refined
    exact = f.exact().mean(0)  # (L,)
    got = report.vectors[0].numpy()
    residual = abs(got.sum() - f.gap().mean())  # Eq. 9 on the average, recomputed
    assert report.measures[0][0] == pytest.approx(residual, abs=1e-12)
    assert residual <= 0.01
    assert spec.spread_met(report.measures[1][0])  # the median |R| over other shifts within 0.01
    assert report.measures[2][0] <= 0.05
    distance = np.linalg.norm(got - exact) / np.linalg.norm(exact)
    cosine = got @ exact / (np.linalg.norm(got) * np.linalg.norm(exact))
    assert distance <= 0.10
    assert cosine >= 0.99
    # the per-reference integrals and residuals it reports are the nodes' own
    assert np.allclose(report.residual[:, 0], np.abs(report.integral[:, 0] - f.gap()[:, 0]))
    assert report.nodes.sum() == report.evals
    assert len(set(report.nodes.tolist())) > 1  # it refined some references, not all alike


def test_a_budget_too_small_is_flagged_and_its_split_is_off() -> None:
    """The same family, rougher (up to 12 oscillations), at the first pass's budget: the rule does not hold,
    the run says so, and the per-token split is indeed not within App. B.4's 0.10 of the exact one."""
    f = SineTokens(256, 12, rough=12.0, seed=1)
    spec = CertifiedSpec(max_evals=512)
    report = certify(f, f.gap(), spec, seed=7)
    assert report.exhausted
    assert report.evals == 512
    _residual, spread, vector = (float(m[0]) for m in report.measures)
    assert not spec.spread_met(spread) or vector > 0.05
    exact = f.exact().mean(0)
    distance = np.linalg.norm(report.vectors[0].numpy() - exact) / np.linalg.norm(exact)
    assert distance > 0.10
    generous = certify(f, f.gap(), CertifiedSpec(max_evals=16384), seed=7)  # the same with room: it holds
    assert not generous.exhausted


class FrozenState:
    """What ``_next_round`` reads of a run: signed per-reference errors rho (M, T), points n (M,) and the
    vectors' squared nested differences (M, T), zero unless given."""

    def __init__(self, rho: np.ndarray, n: np.ndarray, diff_norm2: np.ndarray | None = None) -> None:
        self.errors, self.n = rho, n
        self.diff_norm2 = np.zeros_like(rho) if diff_norm2 is None else diff_norm2

    def rho(self) -> np.ndarray:
        return self.errors


# M = 4 at 8 points each: R = mean = +0.1, sigma_R = sqrt(0.3^2 + 0.25^2 + 0.05^2 + 0.3^2) / 4 = 0.124
MIXED = FrozenState(np.array([[0.3], [-0.25], [0.05], [0.3]]), np.array([8, 8, 8, 8]))


def test_while_only_the_residual_fails_rounds_double_references_with_the_averages_sign() -> None:
    """Spread and vector held, residual failing with R > 0: the round doubles the references with rho_r > 0
    (largest first) and never the one at -0.25, which a sign-blind choice by rho_r^2 would take second: a
    refinement of it moves R away from 0 in expectation."""
    residual_only = Failing(np.array([True]), spread=False, vector=False)
    assert _next_round(MIXED, residual_only, left=1000, size=16) == [0, 3]
    assert _next_round(MIXED, residual_only, left=1000, size=1000) == [0, 3, 2]
    spread = Failing(np.array([True]), spread=True, vector=False)  # the spread fails: by rho_r^2, either sign
    assert _next_round(MIXED, spread, left=1000, size=16) == [0, 3]
    assert _next_round(MIXED, spread, left=1000, size=24) == [0, 3, 1]
    held = Failing(np.array([False]), spread=False, vector=False)  # nothing fails: nothing to double
    assert _next_round(MIXED, held, left=1000, size=1000) == []


def residual_phase(chooser, families: int = 24) -> float:
    """Evaluations the rule spends after its spread (2) first holds, summed over ``families`` rough M = 64
    families (the vector criterion off), with ``chooser`` choosing each round."""
    spec, spent = CertifiedSpec(vector_tolerance=1.0, max_evals=32768), 0.0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("xurs_pipeline.attribution.certified._next_round", chooser)
        for seed in range(families):
            f = SineTokens(64, 12, rough=10.0, seed=seed)
            report = certify(f, f.gap(), spec, seed=seed)
            spread_holds = spec.spread_met(report.trace[:, 2])
            spent += report.evals - report.trace[np.argmax(spread_holds), 0]
    return spent


def test_the_signed_push_ends_the_residual_phase_sooner_than_a_sign_blind_or_reversed_one() -> None:
    """Over 24 rough families at M = 64, the evaluations spent once the spread holds and the residual alone
    fails: the signed push spends fewer than the same rule choosing by rho_r^2 whatever the sign (measured
    2,424 against 3,470), and a push towards the wrong sign spends far more (406,844): the sign is what
    works."""

    def blind(state, failing, left, size):
        return _next_round(state, Failing(failing.residual, True, failing.vector), left, size)

    def reversed_push(state, failing, left, size):  # rho_r - 2 mean rho: the averaged residual's sign flipped
        mirrored = FrozenState(state.rho() - 2 * state.rho().mean(0), state.n, state.diff_norm2)
        return _next_round(state if failing.spread else mirrored, failing, left, size)

    signed = residual_phase(_next_round)
    assert signed < 0.8 * residual_phase(blind)
    assert residual_phase(reversed_push) > 5 * signed


def test_the_spread_guard_refuses_a_cancellation_of_wrong_references() -> None:
    """Two references whose integrals are off by +0.5 and -0.5 at every resolution (a biased integrand the
    rule cannot fix): the averaged residual is exactly 0, App. B.4's residual alone would pass, but the
    spread is not within the tolerance, so the rule is not met and the run ends flagged."""

    def evaluate(nodes: list[tuple[int, np.ndarray]]) -> list[tuple[np.ndarray, torch.Tensor]]:
        slopes = [np.full((len(alphas), 1), 1.5) for _, alphas in nodes]  # ∫ = 1.5 against exact 1.0, 2.0
        return [(s, torch.tensor(s.sum(0, keepdims=True))) for s in slopes]

    report = certify(evaluate, np.array([[1.0], [2.0]]), CertifiedSpec(max_evals=64), seed=3)
    assert np.all(report.trace[:, 1] == 0.0)  # the averaged residual: exactly 0 at every step
    assert np.all(report.trace[:, 2] > 0.01)  # its spread: 1.96 x sqrt(0.5) / 2
    assert report.trace[0, 2] == pytest.approx(1.959963984540054 * np.sqrt(0.5) / 2)
    assert report.exhausted


@pytest.mark.parametrize(("sigma_r", "met"), [(0.0148, True), (0.0149, False), (0.0051, True), (0.02, False)])
def test_the_spread_criterion_is_app_b4_median_residual_over_reruns(sigma_r: float, met: bool) -> None:
    """Criterion (2) asks the median of |R| over other shifts, 0.674 sigma_R for a centred normal R, within
    the tolerance: sigma_R up to 0.01 / 0.6745 = 0.01483 passes at 0.01, above it fails, whatever the 95%
    half-width (0.029 at the limit); checked against scipy's normal quantiles and by the rule itself."""
    from scipy.stats import halfnorm, norm

    spec = CertifiedSpec()
    half_width = norm.ppf(0.975) * sigma_r
    assert bool(spec.spread_met(half_width)) is met
    assert bool(halfnorm.median(scale=sigma_r) <= 0.01) is met
    assert bool(spec.met(0.0, half_width, 0.0)) is met
    assert not spec.met(0.011, half_width, 0.0)  # (1), the exact R, still judges alone


def test_budget_below_the_first_pass_is_a_one_line_error_naming_the_key() -> None:
    f = SineTokens(256, 4, rough=1.0)
    with pytest.raises(BudgetError, match=r"attribution\.certified_max_evals=500: .* 2 x 256 = 512") as err:
        certify(f, f.gap(), CertifiedSpec(max_evals=500), seed=0)
    assert isinstance(err.value, XursError)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tolerance": 0.0}, r"certified_tolerance=0.0: must be in \(0, 1\)"),
        ({"tolerance": 1.0}, r"certified_tolerance=1.0: must be in \(0, 1\)"),  # certified at its first pass
        ({"vector_tolerance": 1.5}, r"certified_vector_tolerance=1.5: must be in \(0, 1\]"),
        ({"first_nodes": 3}, "certified_first_nodes=3: must be a power of 2"),
        ({"first_nodes": 1}, "certified_first_nodes=1: must be a power of 2"),
    ],
)
def test_spec_refuses_bad_values_by_key(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        CertifiedSpec(**kwargs)
