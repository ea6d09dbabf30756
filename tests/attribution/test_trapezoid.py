"""``kronrod_rule=trapezoid`` (``attribution/trapezoid.py``): on analytic integrands whose per-token integrals
are known, against scipy's trapezoid on the same nodes, the exact interval errors, the budget; on a tiny
model through the engine against a dense independent quadrature."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import TinyBeliefClassifier, dense_midpoint, tiny_path_problem, width_fn
from scipy.integrate import trapezoid as scipy_trapezoid

from xurs_pipeline.attribution import trapezoid
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.estimators import AdaptiveKronrod
from xurs_pipeline.attribution.quadrature import BudgetError, KronrodSpec


class Swings:
    """M paths, each F_r(α) = Σ_j s_j sigmoid((α - c_j) / w_j) with token j holding component j: the exact
    per-token integral of reference r is its component's change from α = 0 to 1. Every call is logged."""

    def __init__(self, n_refs: int = 6, tokens: int = 5, seed: int = 0, width: float = 0.02) -> None:
        rng = np.random.default_rng(seed)
        self.c = rng.uniform(0.1, 0.9, (n_refs, tokens))
        self.w = rng.uniform(width / 4, width, (n_refs, tokens))
        self.s = rng.choice([-1.0, 1.0], (n_refs, tokens)) * rng.uniform(0.3, 1.0, (n_refs, tokens))
        self.calls: list[tuple[np.ndarray, np.ndarray]] = []

    def parts(self, r: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per token, F's component and its slope at (r, α): (n, tokens) each."""
        z = 1.0 / (1.0 + np.exp(-(a[:, None] - self.c[r]) / self.w[r]))
        return self.s[r] * z, self.s[r] * z * (1 - z) / self.w[r]

    def __call__(self, refs: np.ndarray, alphas: np.ndarray):
        self.calls.append((refs.copy(), alphas.copy()))
        value, slope = self.parts(refs, alphas)
        vectors = torch.as_tensor(slope, dtype=torch.float32)[:, None, :]  # (n, T = 1, tokens)
        return slope.sum(1, keepdims=True), value.sum(1, keepdims=True), vectors

    def ends(self) -> np.ndarray:
        refs = np.arange(len(self.c))
        start, end = (self.parts(refs, np.full(len(refs), a))[0].sum(1) for a in (0.0, 1.0))
        return np.stack([start, end], axis=1)[:, :, None]  # (M, 2, T = 1)

    def exact(self) -> np.ndarray:
        """Per reference the exact per-token integrals (M, tokens)."""
        refs = np.arange(len(self.c))
        return self.parts(refs, np.ones(len(refs)))[0] - self.parts(refs, np.zeros(len(refs)))[0]


def _relative(vectors: list[torch.Tensor], exact: np.ndarray) -> float:
    got = torch.stack(vectors)[:, 0].double().numpy()
    return float(np.linalg.norm(got - exact) / np.linalg.norm(exact))


def test_bound_rule_meets_its_tolerance_and_the_per_token_integrals() -> None:
    """Under the bound rule the mean bound is within the tolerance, every residual below its bound, and the
    per-token vectors within a few times the tolerance of the exact integrals (swings of width 0.005-0.02)."""
    paths = Swings()
    report = trapezoid.integrate(paths, paths.ends(), KronrodSpec(0.005, 100_000, 1, "bound"), batch=8)
    assert not report.exhausted
    assert report.bound.mean() <= 0.005
    assert np.all(report.residual.max(axis=1) <= report.bound + 1e-12)
    assert _relative(report.payload, paths.exact()) < 0.01
    assert report.evals == sum(len(a) for _, a in paths.calls)


def test_loose_tolerance_fails_the_vectors() -> None:
    """The check must be able to fail: stopped at a loose bound the same paths' vectors are far off."""
    paths = Swings()
    report = trapezoid.integrate(paths, paths.ends(), KronrodSpec(0.3, 100_000, 1, "bound"), batch=8)
    assert _relative(report.payload, paths.exact()) > 0.1


def test_integral_is_scipys_trapezoid_on_the_final_nodes() -> None:
    """Each reference's integral is scipy's trapezoid of the slopes at its nodes (every node evaluated once,
    none twice), and its residual the difference from the exact gap."""
    paths = Swings(n_refs=3)
    ends = paths.ends()
    report = trapezoid.integrate(paths, ends, KronrodSpec(0.01, 100_000, 2, "residual"), batch=4)
    refs = np.concatenate([r for r, _ in paths.calls])
    alphas = np.concatenate([a for _, a in paths.calls])
    for r in range(3):
        nodes = np.sort(alphas[refs == r])
        assert len(np.unique(nodes)) == len(nodes) == report.intervals[r] + 1
        slope = paths.parts(np.full(len(nodes), r), nodes)[1].sum(1)
        expected = scipy_trapezoid(slope, nodes)
        assert report.integral[r, 0] == pytest.approx(expected, abs=1e-12)
        assert report.residual[r, 0] == pytest.approx(abs(expected - (ends[r, 1, 0] - ends[r, 0, 0])))


def test_smooth_paths_are_exact_for_linear_slopes() -> None:
    """F quadratic in α (slope linear): the trapezoid is exact, so the first pass already meets the rule."""

    def evaluate(refs, alphas):
        slope = (1.0 + 2.0 * alphas)[:, None]
        value = (alphas + alphas**2)[:, None]
        return slope, value, torch.as_tensor(slope, dtype=torch.float32)[:, :, None]

    ends = np.array([[[0.0], [2.0]]] * 4)
    report = trapezoid.integrate(evaluate, ends, KronrodSpec(1e-9, 1000, 1, "bound"), batch=8)
    assert report.evals == 8
    assert not report.exhausted
    np.testing.assert_allclose(torch.stack(report.payload)[:, 0, 0].numpy(), 2.0, rtol=1e-6)


def test_budget_below_first_pass_and_exhausted_budget() -> None:
    paths = Swings()
    with pytest.raises(BudgetError, match=r"kronrod_max_evals=10: below the trapezoid's first pass of 12"):
        trapezoid.integrate(paths, paths.ends(), KronrodSpec(0.01, 10, 1, "bound"))
    report = trapezoid.integrate(paths, paths.ends(), KronrodSpec(1e-6, 40, 1, "bound"), batch=8)
    assert report.exhausted
    assert report.evals == 40


def test_config_names_the_rule_and_its_first_pass() -> None:
    with pytest.raises(ValueError, match=r"attribution\.kronrod_rule='simpson': must be one of"):
        AttributionConfig(method="kronrod", kronrod_rule="simpson")
    with pytest.raises(ValueError, match=r"kronrod_rule='trapezoid' reads F along straight paths, not "):
        AttributionConfig(method="kronrod", kronrod_rule="trapezoid", path="blocks")
    assert AttributionConfig(method="kronrod", path="blocks").kronrod_rule == "k15"  # K15 integrates blocks
    cfg = AttributionConfig(
        method="kronrod", kronrod_rule="trapezoid", refs_per_collection=4, kronrod_intervals=3
    )
    assert cfg.kronrod_first_pass == 16
    with pytest.raises(
        ValueError, match=r"kronrod_max_evals=15: must be >= the first pass, \(kronrod_intervals"
    ):
        AttributionConfig(
            method="kronrod",
            kronrod_rule="trapezoid",
            refs_per_collection=4,
            kronrod_max_evals=15,
            kronrod_intervals=3,
        )


def test_on_a_tiny_model_it_agrees_with_a_dense_quadrature() -> None:
    """Through the engine on a tiny model: the per-token vector agrees with 2,048 plain-autograd midpoints
    a reference, the reported residual is recomputed from the vector, and it agrees with the K15 rule at
    fewer evaluations."""
    model = TinyBeliefClassifier(vocab=40).requires_grad_(False)
    target = 2
    problem = tiny_path_problem(model, 2, target)
    res = AdaptiveKronrod(KronrodSpec(1e-4, 4000, 1, "bound", rule="trapezoid")).attribute(problem)
    assert not res.exhausted
    assert res.error_bound[0] <= 1e-4
    width = width_fn(model, problem.prompt, target)
    bases = model.embed(problem.refs.prepared_ids)
    dense = sum(dense_midpoint(width, problem.prompt.embeds, b[None], 2048) for b in bases) / len(bases)
    torch.testing.assert_close(res.e[0], dense, atol=5e-4, rtol=0)
    net = float(problem.input_widths[target] - problem.ref_widths[:, target].mean())
    assert abs(float(res.e[0].sum()) - net) <= res.error_bound[0] + 1e-6
    k15 = AdaptiveKronrod(KronrodSpec(1e-4, 4000, 1, "bound")).attribute(problem)
    torch.testing.assert_close(res.e, k15.e, atol=5e-4, rtol=0)
    assert res.grad_evals < k15.grad_evals
