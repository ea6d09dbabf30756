"""Deliberately degraded readings and the known-ranking check: a yardstick that credits a method must rank a
degraded copy of that method's reading below it (F-Fidelity, Zheng et al., ICLR 2025: a yardstick is first
checked to rank deliberately degraded explainers below the real ones).

Readings are one row per (method, run, role, record id) with each of two feature groups' (cues') scores
(``evaluation/swap/readings.COLUMNS``: ``best_1``, ``best_2`` the largest token magnitude in each cue,
``total_1``, ``total_2`` each cue's summed magnitude, and ``top``, ``share_1`` read from them by
``readings.CueReading``). :func:`degraded` returns copies with the method renamed ``<method>~<degradation>``
(:func:`degraded_name`) and ``top`` and ``share_1`` re-read by ``CueReading``; the input is left unchanged:

- ``swapped``: the two cues' scores exchanged on every probe: the reading ranks first the cue the method
  ranks second;
- ``half_swapped``: exchanged on half the probes (rounded down) of each (method, run): those with the
  lowest CRC-32 of (seed, method, run, record id), deterministic and independent of the rows' order, so
  the reading agrees with the method on one half and ranks the other cue first on the other, at chance by
  construction.

Shuffling scores among one cue's tokens is no degradation here: a cue's summed magnitude (the swap plan's
cue score, ``CUE_SCORE = "total"``) and its largest token magnitude are the same under any permutation of
the cue's tokens, so the reading, and any yardstick scored by it, cannot see it (by design: the cue is
scored as a whole).

:func:`known_ranking`: on units (probes) where a reading's outcome (agrees with the yardstick, or not) and
each of its degraded copies' are known, the one-sided stratified exact McNemar test
(``significance.paired_test``) that the reading is right more often; it *ranks* the copy below where the
p value is at most ``alpha``. A copy absent from the outcomes is tested on no unit (p 1): not ranked.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.significance import paired_test
from xurs_pipeline.evaluation.swap.readings import COLUMNS, CueReading

SEPARATOR = "~"  # between a method's name and its degradation's
SCORES = ("best_1", "best_2", "total_1", "total_2")


def degraded_name(method: str, degradation: str) -> str:
    """The name a degraded copy of ``method``'s readings carries: ``<method>~<degradation>``."""
    return f"{method}{SEPARATOR}{degradation}"


def is_degraded(methods: pd.Series) -> pd.Series:
    """Per method name (n,): whether it names a degraded copy."""
    return methods.astype(str).str.contains(SEPARATOR, regex=False)


def seeded_half(readings: pd.DataFrame, seed: int) -> np.ndarray:
    """(n,) bool: per (method, run), the half of its rows (rounded down) with the lowest CRC-32 of
    ``<seed>|<method>|<run>|<record_id>``."""
    named = zip(readings["method"], readings["run"], readings["record_id"], strict=True)
    keys = [zlib.crc32(f"{seed}|{m}|{r}|{rid}".encode()) for m, r, rid in named]
    crc = pd.Series(keys, index=readings.index, dtype=np.int64)
    groups = crc.groupby([readings["method"], readings["run"]])
    return (groups.rank(method="first") <= groups.transform("size") // 2).to_numpy()


def swapped_where(readings: pd.DataFrame, where: np.ndarray) -> pd.DataFrame:
    """A copy of ``readings`` (``COLUMNS`` only) with the two cues' scores exchanged on the rows ``where``
    (n,) bool, ``top`` and ``share_1`` re-read (``CueReading``)."""
    out = readings.loc[:, list(COLUMNS)].copy()
    for first, second in (("best_1", "best_2"), ("total_1", "total_2")):
        out.loc[where, [first, second]] = readings.loc[where, [second, first]].to_numpy()
    read = [CueReading((b1, b2), (t1, t2)) for b1, b2, t1, t2 in out[list(SCORES)].itertuples(index=False)]
    return out.assign(top=[r.top for r in read], share_1=[r.share_1 for r in read])


def degraded(readings: pd.DataFrame, names: Sequence[str], seed: int) -> pd.DataFrame:
    """Readings (``COLUMNS``) -> each degradation of ``names`` (module docstring) of every reading, one after
    another, methods renamed (:func:`degraded_name`). ValueError on an unknown degradation or a method
    already named as a degraded copy."""
    if is_degraded(readings["method"]).any():
        raise ValueError(f"a method named with {SEPARATOR!r} is already a degraded copy")
    where = {"swapped": np.ones(len(readings), dtype=bool), "half_swapped": seeded_half(readings, seed)}
    unknown = [n for n in names if n not in where]
    if unknown:
        raise ValueError(f"unknown degradations {unknown}: {list(where)}")
    copies = [
        swapped_where(readings, where[n]).assign(method=[degraded_name(m, n) for m in readings["method"]])
        for n in names
    ]
    return pd.concat([readings.loc[:, list(COLUMNS)].iloc[:0], *copies], ignore_index=True)


def ranked_below(
    reading: Sequence[bool], copy: Sequence[bool], strata: Sequence[str], alpha: float
) -> dict[str, Any]:
    """A reading's and its degraded copy's outcomes (n,) on the same units, with their strata -> ``k``,
    ``k_degraded`` of ``n``, the one-sided stratified exact McNemar ``p`` (the reading right more often) and
    ``ranks`` (``p <= alpha``)."""
    test = paired_test(reading, copy, strata, "greater")
    return {
        "k": int(np.sum(reading)),
        "k_degraded": int(np.sum(copy)),
        "n": len(reading),
        "p": test.p,
        "ranks": bool(test.p <= alpha),
    }


def known_ranking(
    outcomes: pd.DataFrame,
    methods: Iterable[str],
    names: Sequence[str],
    strata: Callable[[pd.DataFrame], Sequence[str]],
    alpha: float,
) -> dict[str, dict[str, dict[str, Any]]]:
    """``outcomes`` (units, readings): one bool column per reading, NaN where unknown; ``strata`` a function
    of the units' frame (``outcomes``' index as columns) giving each unit's stratum -> per method of
    ``methods``, per degradation of ``names``, :func:`ranked_below` on the units where both are known."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for method in methods:
        out[method] = {}
        for name in names:
            pair = outcomes.reindex(columns=[method, degraded_name(method, name)]).dropna()
            units = list(strata(pair.index.to_frame(index=False)))
            first, second = (pair[c].to_numpy(dtype=bool) for c in pair.columns)
            out[method][name] = ranked_below(first, second, units, alpha)
    return out


def unranked(ranking: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The degraded copies :func:`known_ranking` did not rank below their method, each as
    ``<method>~<degradation> k_degraded/n against k/n (p ...)``."""
    return [
        f"{degraded_name(method, name)} {c['k_degraded']}/{c['n']} against {c['k']}/{c['n']} (p {c['p']:.3g})"
        for method, by in ranking.items()
        for name, c in by.items()
        if not c["ranks"]
    ]
