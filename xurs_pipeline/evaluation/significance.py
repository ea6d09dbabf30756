"""Shares of yes/no outcomes and tests between two of them, each outcome carrying a cluster label for its
unit of independence (the swap study's plan names the data seed, ``swap/plan.py``; within one seed, the
probe). Used by the swap study's intervals and planned comparisons and by the clue's rank-1 share
(``evidence.py``).

- :func:`wilson`, :func:`wilson_count`: a share of independent trials with its Wilson score interval;
  :func:`proportion`: ``k`` of ``n`` as keyed fields.
- :func:`clustered_proportion`: a share with the Wilson interval at the effective sample size ``n / deff``,
  Kish's design effect ``deff`` = the cluster-robust variance of the ratio estimator over the binomial one
  (at least 1): outcomes of one cluster count as fewer independent trials the more they agree with each
  other.
- :func:`paired_test`: two raters on the same units, stratified by cluster (``b_k``: units of stratum
  ``k`` the first gets right and the second wrong, ``c_k`` the reverse). The p value is the stratified
  exact McNemar test (the discordant pairs of every stratum pooled, a binomial test of ``sum b_k`` in
  ``sum (b_k + c_k)`` against 1/2: Mantel-Haenszel for matched pairs). Beside it, with the cluster as the
  unit, Durkalski et al.'s (2003) clustered statistic ``z = sum_k d_k / sqrt(sum_k d_k^2)``
  (``d_k = b_k - c_k``; at most ``sqrt(K)`` with ``K`` clusters, so with five seeds it cannot carry a
  family of tests: reported, not tested) and the number of strata where each rater is ahead.
- :func:`holm`: Holm's step-down adjustment of a family of p-values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order: sort ascending, ``p_(i) * (m - i)`` (i from 0), running
    maximum, capped at 1. NaN stays NaN and does not count in ``m``."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    finite = np.flatnonzero(~np.isnan(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    running = 0.0
    for i, at in enumerate(order):
        running = max(running, min(1.0, p[at] * (len(order) - i)))
        out[at] = running
    return out.tolist()


def _per_cluster(values: np.ndarray, clusters: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (sorted by name): the sum of ``values`` (n,) and the count of outcomes."""
    names = np.asarray(clusters)
    if names.shape != values.shape:
        raise ValueError(f"one cluster per probe needed: {names.shape} clusters for {values.shape} probes")
    keys, index = np.unique(names, return_inverse=True)
    return np.bincount(index, weights=values, minlength=len(keys)), np.bincount(index, minlength=len(keys))


@dataclass(frozen=True)
class Share:
    """``k`` of ``n`` outcomes (``value``) with its interval ``low``..``high``; ``clusters`` the clusters
    they fall in and ``deff`` the design effect the interval counts (independent trials: ``n`` and 1)."""

    value: float
    low: float
    high: float
    k: int
    n: int
    clusters: int
    deff: float

    def fields(self, prefix: str) -> dict[str, float | int]:
        """The share as ``<prefix>``, ``_low``, ``_high``, ``_k``, ``_n``."""
        return {
            prefix: self.value,
            f"{prefix}_low": self.low,
            f"{prefix}_high": self.high,
            f"{prefix}_k": self.k,
            f"{prefix}_n": self.n,
        }


NO_SHARE = Share(float("nan"), float("nan"), float("nan"), 0, 0, 0, float("nan"))  # of no outcome


def wilson(successes: Sequence[bool], confidence: float = 0.95) -> Share:
    """Share of ``successes``, independent trials, with its Wilson score interval (:func:`wilson_count`)."""
    return wilson_count(int(np.sum(successes)), len(successes), confidence)


def wilson_count(k: int, n: int, confidence: float = 0.95) -> Share:
    """``k`` successes of ``n`` independent trials with the Wilson score interval
    (``scipy.stats.binomtest``)."""
    if n == 0:
        raise ValueError("no trials: a share needs at least one")
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Share(k / n, float(ci.low), float(ci.high), k, n, n, 1.0)


def proportion(k: int, n: int, prefix: str, confidence: float = 0.95) -> dict[str, float | int]:
    """``k`` of ``n`` as :meth:`Share.fields` under ``prefix`` (:func:`wilson_count`); NaN for none."""
    return (wilson_count(k, n, confidence) if n else NO_SHARE).fields(prefix)


def design_effect(agrees: np.ndarray, clusters: Sequence[str]) -> tuple[float, int]:
    """(Kish's design effect of the share of ``agrees`` (n,) under ``clusters``, at least 1; the number of
    clusters). With one cluster nothing estimates the between-cluster variance: the effect is ``n`` (one
    independent trial)."""
    n = len(agrees)
    sums, counts = _per_cluster(agrees.astype(np.float64), clusters)
    p = agrees.mean()
    if len(sums) < 2:
        return float(n), len(sums)
    robust = len(sums) / (len(sums) - 1) * float(((sums - p * counts) ** 2).sum()) / n**2
    binomial = p * (1 - p) / n
    return (max(1.0, robust / binomial) if binomial > 0 else 1.0), len(sums)


def clustered_proportion(agrees: Sequence[bool], clusters: Sequence[str], confidence: float = 0.95) -> Share:
    """The share of ``agrees`` with its clustered Wilson interval (module docstring); NaN for none."""
    a = np.asarray(agrees, dtype=bool)
    if not len(a):
        return NO_SHARE
    deff, count = design_effect(a, clusters)
    p, trials = float(a.mean()), len(a) / deff  # trials need not be whole: scipy's interval takes whole ones
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    centre = (p + z**2 / (2 * trials)) / (1 + z**2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2)) / (1 + z**2 / trials)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return Share(p, low, high, int(a.sum()), len(a), count, deff)


@dataclass(frozen=True)
class PairedTest:
    """``only_first``/``only_second``: discordant units each way; ``ahead``/``behind``: strata where the
    first rater has more/fewer; ``z_clustered`` Durkalski's statistic (NaN without a discordant unit);
    ``p`` the stratified exact McNemar p value under the alternative."""

    only_first: int
    only_second: int
    strata: int
    ahead: int
    behind: int
    z_clustered: float
    p: float


def paired_test(
    first: Sequence[bool], second: Sequence[bool], strata: Sequence[str], alternative: str = "two-sided"
) -> PairedTest:
    """The module docstring's paired test of two raters' outcomes on the same units; ``alternative``:
    ``greater`` (the first is right more often) or ``two-sided``. No discordant unit: p 1."""
    a, b = np.asarray(first, dtype=bool), np.asarray(second, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same probes: {a.shape} != {b.shape}")
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative={alternative!r}: 'greater' or 'two-sided'")
    d, _ = _per_cluster((a & ~b).astype(np.float64) - (b & ~a).astype(np.float64), strata)
    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    spread = float((d**2).sum())
    z = float(d.sum()) / math.sqrt(spread) if spread else float("nan")
    n = only_a + only_b
    p = float(stats.binomtest(only_a, n, 0.5, alternative=alternative).pvalue) if n else 1.0
    return PairedTest(only_a, only_b, len(d), int((d > 0).sum()), int((d < 0).sum()), z, p)
