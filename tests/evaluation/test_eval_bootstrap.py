"""Question-level bootstrap of the mean advantage against scipy.stats.bootstrap and a numpy loop."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from xurs_pipeline.evaluation.bootstrap import mean_advantage_interval

RNG = np.random.default_rng(2024)
TOP = RNG.gamma(2.0, 0.03, size=40)
RANDOM = 0.6 * TOP + RNG.gamma(1.5, 0.01, size=40)  # correlated with TOP, as per-question effects are


@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_matches_scipy_bootstrap_of_the_per_question_advantage(method):
    ours = mean_advantage_interval(TOP, RANDOM, resamples=2000, confidence=0.95, method=method, seed=5)
    ref = stats.bootstrap(
        (TOP - RANDOM,), np.mean, n_resamples=2000, method=method, rng=np.random.default_rng(5)
    ).confidence_interval
    assert ours.mean == pytest.approx(float(np.mean(TOP - RANDOM)), abs=1e-15)
    assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert ours.low < ours.mean < ours.high
    assert (ours.n, ours.resamples, ours.method) == (40, 2000, method)


def test_percentile_interval_agrees_with_a_plain_numpy_loop():
    ours = mean_advantage_interval(TOP, RANDOM, resamples=10_000, seed=0)
    rng = np.random.default_rng(123)
    idx = rng.integers(0, TOP.size, size=(10_000, TOP.size))  # resample questions, keep pairs together
    means = (TOP[idx] - RANDOM[idx]).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    half = (high - low) / 2
    assert ours.low == pytest.approx(low, abs=0.05 * half)
    assert ours.high == pytest.approx(high, abs=0.05 * half)


def test_keeping_pairs_together_gives_the_narrower_paired_interval():
    paired = mean_advantage_interval(TOP, RANDOM, resamples=4000, seed=1)
    unpaired = stats.bootstrap(
        (TOP, RANDOM),
        lambda a, b, axis: a.mean(axis) - b.mean(axis),
        n_resamples=4000,
        method="percentile",
        rng=np.random.default_rng(1),
    ).confidence_interval
    assert paired.high - paired.low < 0.8 * (unpaired.high - unpaired.low)


def test_degenerate_and_bad_inputs():
    one = mean_advantage_interval(np.array([0.3]), np.array([0.1]))
    assert (one.mean, one.low, one.high) == pytest.approx((0.2, 0.2, 0.2))
    same = mean_advantage_interval(np.full(5, 0.4), np.full(5, 0.1), method="BCa")
    assert (same.low, same.high) == pytest.approx((0.3, 0.3))
    with pytest.raises(ValueError, match="empty"):
        mean_advantage_interval(np.array([]), np.array([]))
    with pytest.raises(ValueError, match="equal-length"):
        mean_advantage_interval(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="NaN"):
        mean_advantage_interval(np.array([np.nan, 1.0]), np.ones(2))
    with pytest.raises(ValueError, match="bootstrap_method"):
        mean_advantage_interval(TOP, RANDOM, method="basic")
