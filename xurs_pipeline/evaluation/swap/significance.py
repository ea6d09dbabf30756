"""Comparisons that are tests (issue 53, item 4): each on per-probe agreements (1 = the method ranks first
the cue the yardstick names), all from ``scipy.stats``.

- :func:`beats_chance`: on the probes where a model's behaviour departs from its training rule, does the
  method side with the behaviour more often than chance (one-sided exact binomial test against 1/2)?
- :func:`mcnemar`: two methods on the same probes, the exact McNemar test (two-sided binomial test on the
  discordant pairs).
- :func:`model_bootstrap`: the agreement difference of two methods with probes resampled in clusters, one
  cluster per trained model (a probe's readings under one model are not independent cases).
- :func:`holm`: Holm's step-down adjustment of a family of p-values.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Binomial:
    k: int
    n: int
    p: float


def beats_chance(agrees: Sequence[bool]) -> Binomial:
    """One-sided exact binomial test of ``k`` agreements in ``n`` against 1/2 (NaN p for none)."""
    k, n = int(np.sum(agrees)), len(agrees)
    p = float(stats.binomtest(k, n, 0.5, alternative="greater").pvalue) if n else float("nan")
    return Binomial(k, n, p)


@dataclass(frozen=True)
class McNemar:
    """``only_first``: probes the first method gets right and the second wrong; ``only_second``: the
    reverse."""

    only_first: int
    only_second: int
    p: float


def mcnemar(first: Sequence[bool], second: Sequence[bool]) -> McNemar:
    """Exact McNemar test of two methods' agreements on the same probes (equal lengths)."""
    a, b = np.asarray(first, dtype=bool), np.asarray(second, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same probes: {a.shape} != {b.shape}")
    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    n = only_a + only_b
    p = float(stats.binomtest(only_a, n, 0.5).pvalue) if n else 1.0
    return McNemar(only_a, only_b, p)


@dataclass(frozen=True)
class Difference:
    """Mean agreement of the first method minus the second, its percentile interval over cluster
    resamples, the share of resamples at or below 0 (a one-sided p), and the number of clusters."""

    mean: float
    low: float
    high: float
    p: float
    clusters: int


def model_bootstrap(
    first: Sequence[bool], second: Sequence[bool], clusters: Sequence[str], resamples: int = 2000,
    confidence: float = 0.95, seed: int = 0,
) -> Difference:  # fmt: skip
    """The agreement difference ``first - second`` over probes, resampling whole clusters (trained models)
    with replacement."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    names = np.asarray(clusters)
    keys = sorted(set(names.tolist()))
    if not len(a) or a.shape != b.shape or names.shape != a.shape:
        raise ValueError("model bootstrap needs two equal, non-empty agreement lists and a cluster per probe")
    sums = np.array([(a - b)[names == key].sum() for key in keys])
    counts = np.array([(names == key).sum() for key in keys])
    picks = np.random.default_rng(seed).integers(0, len(keys), (resamples, len(keys)))
    diffs = sums[picks].sum(1) / counts[picks].sum(1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(diffs, [tail, 1 - tail])
    return Difference(float(sums.sum() / counts.sum()), float(low), float(high), float((diffs <= 0).mean()),
                      len(keys))  # fmt: skip
