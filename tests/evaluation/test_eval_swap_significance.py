"""The swap study's comparisons as tests (evaluation/swap/significance.py): Holm's adjustment against its
definition applied by brute force, exact McNemar and the binomial test against closed-form binomial sums,
the model bootstrap on cases whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xurs_pipeline.evaluation.swap.significance import beats_chance, holm, mcnemar, model_bootstrap


def holm_rejects(pvalues: list[float], alpha: float) -> list[bool]:
    """Holm's procedure as stated: sort ascending, reject while p_(i) <= alpha / (m - i), stop at the first
    that is not."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    rejected = [False] * len(pvalues)
    for i, at in enumerate(order):
        if pvalues[at] * (len(pvalues) - i) > alpha + 1e-12:  # p_(i) <= alpha / (m - i), in floats
            break
        rejected[at] = True
    return rejected


def brute_force_adjusted(pvalues: list[float]) -> list[float]:
    """The smallest alpha at which Holm's procedure rejects each hypothesis (1 if none): the adjusted p."""
    candidates = sorted({min(1.0, p * k) for p in pvalues for k in range(1, len(pvalues) + 1)} | {1.0})
    return [next(a for a in candidates if holm_rejects(pvalues, a)[i]) for i in range(len(pvalues))]


def test_holm_matches_a_worked_example() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.01, 0.04, 0.03, 0.005]) != pytest.approx([0.04, 0.16, 0.12, 0.02])  # not Bonferroni


@pytest.mark.parametrize("seed", range(6))
def test_holm_is_the_smallest_alpha_holms_procedure_rejects_at(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pvalues = np.round(rng.uniform(0, 0.2, 1 + seed), 4).tolist()
    assert holm(pvalues) == pytest.approx(brute_force_adjusted(pvalues))


def test_holm_leaves_nan_out_of_the_family() -> None:
    out = holm([0.01, float("nan"), 0.02])
    assert math.isnan(out[1])
    assert out[0] == pytest.approx(0.02)
    assert out[2] == pytest.approx(0.02)


def exact_two_sided(b: int, c: int) -> float:
    """Exact McNemar by hand: twice the smaller binomial tail of b + c fair coin flips, capped at 1."""
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize(("b", "c"), [(1, 9), (9, 1), (3, 3), (0, 6), (5, 12)])
def test_mcnemar_counts_only_discordant_pairs(b: int, c: int) -> None:
    both, neither = 7, 4  # concordant pairs do not count
    first = [True] * b + [False] * c + [True] * both + [False] * neither
    second = [False] * b + [True] * c + [True] * both + [False] * neither
    test = mcnemar(first, second)
    assert (test.only_first, test.only_second) == (b, c)
    assert test.p == pytest.approx(exact_two_sided(b, c))


def test_mcnemar_without_discordant_pairs_is_one_and_needs_equal_lengths() -> None:
    assert mcnemar([True, False], [True, False]).p == 1.0
    with pytest.raises(ValueError, match="same probes"):
        mcnemar([True], [True, False])


def test_beats_chance_is_the_one_sided_binomial_tail() -> None:
    test = beats_chance([True] * 9 + [False])
    assert (test.k, test.n) == (9, 10)
    assert test.p == pytest.approx(11 / 1024)  # P(X >= 9), X ~ Bin(10, 1/2)
    assert beats_chance([False] * 9 + [True]).p == pytest.approx(1023 / 1024)  # one-sided: not significant
    assert math.isnan(beats_chance([]).p)


def test_model_bootstrap_resamples_whole_models() -> None:
    first = [True] * 6 + [True] * 4
    second = [False] * 6 + [True] * 4
    models = ["A"] * 6 + ["B"] * 4
    diff = model_bootstrap(first, second, models, resamples=500, seed=0)
    assert diff.mean == pytest.approx(0.6)
    assert diff.clusters == 2
    # every resample is AA (diff 1), BB (0) or AB/BA (0.6): the interval's ends are among those values
    assert {round(diff.low, 6), round(diff.high, 6)} <= {0.0, 0.6, 1.0}
    assert 0.0 < diff.p < 1.0  # the resamples of model B alone show no difference
    same = model_bootstrap(first, first, models, resamples=200)
    assert (same.mean, same.low, same.high, same.p) == (0.0, 0.0, 0.0, 1.0)


def test_model_bootstrap_rejects_unpaired_input() -> None:
    with pytest.raises(ValueError, match="equal, non-empty"):
        model_bootstrap([True], [True, False], ["A", "B"])
