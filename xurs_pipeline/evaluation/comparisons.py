"""Comparisons between attribution runs: sample counts, seeds, leave-one-collection-out (App. B.3-B.4).

A run is a sequence of :class:`RunRecord` keyed by (record_id, target option). Two runs are compared
only when they explain exactly the same keys against the same reference kind; otherwise
:class:`RunMismatchError` says which keys or references differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from xurs_pipeline.errors import XursError
from xurs_pipeline.evaluation.agreement import cosine, relative_distance, spearman, topk_overlap
from xurs_pipeline.evaluation.sections import compare_sections, section_shares


class RunMismatchError(XursError, ValueError):
    """Two attribution runs do not cover the same questions, targets or references."""


@dataclass(frozen=True)
class RunRecord:
    """One explained (record_id, option c) of one run.

    magnitude (seq,): token magnitudes a_i; signed: coordinate-level contributions (seq, hidden), or the
    per-token signed sums (seq,) when coordinates are not kept; width: F_c(X) at the input;
    changed_positions: for an aligned paired reference, the positions alignment changed (App. B.4: the
    token-ranking comparisons concern only these; elsewhere input and reference agree, so every
    attribution is exactly 0 there); empty for other references.
    """

    record_id: str
    c: int
    reference: str
    magnitude: np.ndarray
    signed: np.ndarray
    width: float
    sections: tuple[str, ...] = ()
    changed_positions: tuple[int, ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return (self.record_id, self.c)


def _index(run: Sequence[RunRecord], name: str) -> dict[tuple[str, int], RunRecord]:
    out: dict[tuple[str, int], RunRecord] = {}
    for rec in run:
        if rec.key in out:
            raise RunMismatchError(f"run {name!r}: (record_id, target) {rec.key} appears twice")
        out[rec.key] = rec
    return out


def match_runs(
    run_a: Sequence[RunRecord], run_b: Sequence[RunRecord], names: tuple[str, str] = ("a", "b")
) -> list[tuple[RunRecord, RunRecord]]:
    """Pairs of records with equal keys; raises unless both runs cover the same keys and references."""
    a, b = _index(run_a, names[0]), _index(run_b, names[1])
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    if only_a or only_b:
        raise RunMismatchError(
            f"runs {names[0]!r} and {names[1]!r} cover different questions: only in {names[0]!r}: "
            f"{only_a[:5]}{'...' if len(only_a) > 5 else ''}; only in {names[1]!r}: {only_b[:5]}"
            f"{'...' if len(only_b) > 5 else ''}"
        )
    if not a:
        raise RunMismatchError(f"runs {names[0]!r} and {names[1]!r} are both empty")
    pairs = []
    for key in sorted(a):
        ra, rb = a[key], b[key]
        if ra.reference != rb.reference:
            raise RunMismatchError(
                f"{key}: run {names[0]!r} used reference {ra.reference!r}, run {names[1]!r} {rb.reference!r}"
            )
        if ra.magnitude.shape != rb.magnitude.shape:
            raise RunMismatchError(
                f"{key}: token counts differ ({ra.magnitude.shape[0]} vs {rb.magnitude.shape[0]})"
            )
        if tuple(ra.changed_positions) != tuple(rb.changed_positions):
            raise RunMismatchError(
                f"{key}: the aligned references changed different positions ({list(ra.changed_positions)} "
                f"vs {list(rb.changed_positions)})"
            )
        pairs.append((ra, rb))
    return pairs


def _nonzero(*records: RunRecord) -> bool:
    return all(bool(np.any(np.asarray(r.signed) != 0)) for r in records)


def compare_runs(
    run: Sequence[RunRecord],
    reference_run: Sequence[RunRecord],
    topks: Sequence[int] = (20,),
    names: tuple[str, str] = ("a", "b"),
) -> pd.DataFrame:
    """One row per matched (record_id, c): spearman, overlap_top{k}, cosine, relative_distance (to the
    reference run's vector), width_difference and, when sections are known, the section-level metrics.

    Token rankings (spearman, overlap_top{k}) of records with ``changed_positions`` (aligned paired
    references) compare those positions only (App. B.4); values and sections use every position.
    Undefined values (an all-zero vector's cosine, a constant ranking's Spearman) are NaN, which every
    check counts as a failure.
    """
    rows = []
    for a, b in match_runs(run, reference_run, names):
        ranked = list(a.changed_positions) or slice(None)
        rank_a, rank_b = a.magnitude[ranked], b.magnitude[ranked]
        row: dict[str, float | str | int] = {
            "record_id": a.record_id,
            "c": a.c,
            "reference": a.reference,
            "spearman": spearman(rank_a, rank_b),
            "cosine": cosine(a.signed, b.signed) if _nonzero(a, b) else float("nan"),
            "relative_distance": relative_distance(a.signed, b.signed) if _nonzero(b) else float("nan"),
            "width_difference": abs(a.width - b.width),
        }
        for k in topks:
            row[f"overlap_top{k}"] = topk_overlap(rank_a, rank_b, k)
        if a.sections and _nonzero(a, b):
            shares = [section_shares(r.magnitude, r.sections, r.record_id) for r in (a, b)]
            row.update(compare_sections(*shares))
        elif a.sections:
            row.update({"section_spearman": np.nan, "top_option_agree": np.nan, "share_difference": np.nan})
        rows.append(row)
    return pd.DataFrame(rows)


def token_magnitude(coords: np.ndarray) -> np.ndarray:
    """a_i = (sum_j e_ij^2)^(1/2) (Sec. 3.4): coords (seq, hidden) -> (seq,)."""
    return np.linalg.norm(np.asarray(coords, dtype=np.float64), axis=-1)


def leave_one_out_runs(
    per_collection: Sequence[Sequence[RunRecord]],
) -> tuple[list[RunRecord], list[list[RunRecord]]]:
    """Equal-weight FP64 average over collections (App. B.3) and the averages omitting each collection.

    per_collection[c] is one collection's run with coordinate-level ``signed`` (seq, hidden). Magnitudes
    are recomputed from the averaged coordinates. Returns (full average, [average without collection c]).
    """
    if len(per_collection) < 2:
        raise ValueError(f"leave-one-collection-out needs >= 2 collections, got {len(per_collection)}")
    for i, run in enumerate(per_collection[1:], start=1):
        match_runs(per_collection[0], run, ("collection 0", f"collection {i}"))  # same keys and references
    indexed = [_index(run, str(i)) for i, run in enumerate(per_collection)]

    def average(members: Sequence[int]) -> list[RunRecord]:
        out = []
        for key, first in sorted(indexed[0].items()):
            coords = np.mean([np.asarray(indexed[i][key].signed, dtype=np.float64) for i in members], axis=0)
            out.append(
                RunRecord(
                    first.record_id,
                    first.c,
                    first.reference,
                    token_magnitude(coords),
                    coords,
                    first.width,
                    first.sections,
                    first.changed_positions,
                )
            )
        return out

    everyone = list(range(len(per_collection)))
    return average(everyone), [average([i for i in everyone if i != left]) for left in everyone]
