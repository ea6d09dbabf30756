"""Shares and their tests (evaluation/significance.py): Holm's adjustment against its definition applied by
brute force; the stratified McNemar test against closed-form binomial sums; the Wilson interval against its
closed form and scipy's; the clustered share against scipy's Wilson interval where the design effect is 1
and against Kish's closed form where every cluster agrees within itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from xurs_pipeline.evaluation.significance import (
    clustered_proportion,
    design_effect,
    holm,
    paired_test,
    proportion,
    wilson,
)


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
def test_the_paired_test_counts_only_discordant_pairs(b: int, c: int) -> None:
    both, neither = 7, 4  # concordant pairs do not count
    first = [True] * b + [False] * c + [True] * both + [False] * neither
    second = [False] * b + [True] * c + [True] * both + [False] * neither
    strata = [str(i % 3) for i in range(len(first))]
    test = paired_test(first, second, strata)
    assert (test.only_first, test.only_second) == (b, c)
    assert test.p == pytest.approx(exact_two_sided(b, c))
    one_sided = sum(math.comb(b + c, k) for k in range(b, b + c + 1)) / 2 ** (b + c)
    assert paired_test(first, second, strata, "greater").p == pytest.approx(one_sided)


def test_durkalskis_statistic_is_mcnemars_with_one_probe_a_cluster_and_capped_by_the_cluster_count() -> None:
    first = [True] * 9 + [False] * 3 + [True] * 5
    second = [False] * 9 + [True] * 3 + [True] * 5
    singletons = paired_test(first, second, [str(i) for i in range(len(first))])
    assert singletons.z_clustered**2 == pytest.approx((9 - 3) ** 2 / (9 + 3))  # McNemar's chi-square
    assert stats.norm.sf(singletons.z_clustered) < 0.05
    four_alike = paired_test(first * 4, second * 4, [str(k) for k in range(4) for _ in first])
    assert four_alike.z_clustered == pytest.approx(2.0)  # sqrt(4): four identical seeds, whatever their size
    assert (four_alike.strata, four_alike.ahead, four_alike.behind) == (4, 4, 0)


def test_the_paired_test_without_discordant_pairs_is_one_and_needs_equal_lengths() -> None:
    same = paired_test([True, False], [True, False], ["a", "b"])
    assert same.p == 1.0
    assert math.isnan(same.z_clustered)
    with pytest.raises(ValueError, match="same probes"):
        paired_test([True], [True, False], ["a"])
    with pytest.raises(ValueError, match="one cluster per probe"):
        paired_test([True, False], [False, False], ["a"])


def test_the_clustered_share_is_wilsons_where_the_design_effect_is_one() -> None:
    agrees = [True, False] * 10  # each cluster one right, one wrong: no between-cluster variance
    share = clustered_proportion(agrees, [str(i // 2) for i in range(20)])
    ci = stats.binomtest(10, 20).proportion_ci(method="wilson")
    assert (share.deff, share.k, share.n, share.clusters) == (1.0, 10, 20, 10)
    assert (share.low, share.high) == pytest.approx((ci.low, ci.high))


def test_clusters_that_agree_within_themselves_count_as_fewer_trials() -> None:
    clusters, size = 5, 4  # Kish: deff = m C / (C - 1) when every cluster is all right or all wrong
    agrees = [k < 3 for k in range(clusters) for _ in range(size)]
    labels = [str(k) for k in range(clusters) for _ in range(size)]
    assert design_effect(np.asarray(agrees), labels) == (pytest.approx(size * clusters / (clusters - 1)), 5)
    clustered = clustered_proportion(agrees, labels)
    independent = clustered_proportion(agrees, [str(i) for i in range(len(agrees))])
    assert clustered.low < independent.low
    assert clustered.high > independent.high
    one = clustered_proportion(agrees, ["all"] * len(agrees))  # one cluster: one trial
    assert one.deff == len(agrees)
    assert math.isnan(clustered_proportion([], []).value)


def test_wilson_interval_matches_the_closed_form_and_scipys() -> None:
    k, n, z = 14, 16, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    got = wilson([True] * k + [False] * (n - k))
    assert (got.low, got.high) == pytest.approx((centre - half, centre + half), abs=1e-9)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="wilson")
    at_90 = wilson([True] * k + [False] * (n - k), 0.9)
    assert (at_90.low, at_90.high) == pytest.approx((ci.low, ci.high))
    assert proportion(k, n, "swap")["swap_low"] == got.low
    assert proportion(k, n, "swap")["swap_high"] != pytest.approx(ci.high)  # 0.95, not 0.9
    assert math.isnan(proportion(0, 0, "swap")["swap"])
    with pytest.raises(ValueError, match="no trials"):
        wilson([])
