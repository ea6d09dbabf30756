"""Clue localisation (App. C, Table 9; App. E step 5).

For a region (all active text, or the case description), given as token positions in prompt order:
the clue's share of the region's magnitude, the mean share of the contiguous equal-length control
windows of the region that contain no clue token, their difference in percentage points, the best
(1-based) rank of a clue token within the region, the clue's percentile among the control windows
(``scipy.stats.percentileofscore``, kind "mean"; windows overlap, so it is descriptive), and the
positions whose attribution is forced to zero because input and every reference embedding are equal.

Given the live positions (those that can take attribution, ``nulls.live_positions``), every statistic
counts only them: the region and the clue are their live positions, control windows are runs of
consecutive live region positions, ranks are among live positions, and ``chance_rank_1`` is the
probability that random scores put a clue token first (``nulls.chance_rank_1``). Among live positions
the clue can fill the region so that no equal-length window avoids it: the control comparison is then
NaN (``n_windows`` 0) rather than an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Localisation:
    region: str
    clue_share: float
    control_mean_share: float
    difference_pp: float
    best_rank: int
    percentile: float
    n_windows: int
    forced_zero: tuple[int, ...]
    n_live: int = 0
    n_clue_live: int = 0
    chance_rank_1: float = float("nan")

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "forced_zero": list(self.forced_zero)}


def control_windows(region: Sequence[int], clue: Sequence[int]) -> list[tuple[int, ...]]:
    """Every run of ``len(clue)`` consecutive region positions (in region order) containing no clue token."""
    region = list(region)
    clue_set = set(clue)
    width = len(clue_set)
    if width == 0:
        raise ValueError("the clue has no positions")
    return [
        tuple(region[s : s + width])
        for s in range(len(region) - width + 1)
        if clue_set.isdisjoint(region[s : s + width])
    ]


def identical_positions(inputs: np.ndarray, references: np.ndarray) -> tuple[int, ...]:
    """Positions where every reference embedding equals the input's: attribution there is exactly zero.

    inputs (seq, hidden); references (n_refs, seq, hidden).
    """
    x = np.asarray(inputs)
    refs = np.asarray(references)
    if refs.ndim != 3 or refs.shape[1:] != x.shape:
        raise ValueError(f"references {refs.shape} must be (n_refs, {x.shape[0]}, {x.shape[1]})")
    return tuple(int(i) for i in np.flatnonzero(np.all(refs == x[None], axis=(0, 2))))


def clue_localisation(
    magnitude: np.ndarray,
    region: Sequence[int],
    clue: Sequence[int],
    region_name: str = "region",
    forced_zero: Sequence[int] = (),
    record_id: str = "?",
    live: Sequence[int] | None = None,
) -> Localisation:
    """App. C measurements of ``clue`` within ``region`` from token magnitudes (seq,); with ``live``
    (positions that can take attribution) over the live positions of the region and the clue only."""
    mag = np.asarray(magnitude, dtype=np.float64)
    region = sorted(set(int(i) for i in region))
    clue = sorted(set(int(i) for i in clue))
    where = f"record {record_id!r}, region {region_name!r}"
    if not region or region[0] < 0 or region[-1] >= mag.size:
        raise ValueError(f"{where}: region positions must lie in [0, {mag.size}), got {region[:3]}..")
    outside = sorted(set(clue) - set(region))
    if outside:
        raise ValueError(f"{where}: clue positions {outside} are not in the region")
    full_region = region
    if live is not None:
        live_set = set(int(i) for i in live)
        region = [i for i in region if i in live_set]
        clue = [i for i in clue if i in live_set]
        if not clue:
            raise ValueError(f"{where}: no clue position can take attribution (each equals every reference)")
    total = mag[region].sum()
    if total <= 0:
        raise ValueError(f"{where}: the region's total magnitude is {total}; shares need a positive total")
    windows = control_windows(region, clue)
    if not windows and live is None:
        raise ValueError(
            f"{where}: no control window of {len(clue)} contiguous tokens avoids the clue "
            f"in {len(region)} region tokens"
        )
    clue_share = mag[clue].sum() / total
    window_shares = np.array([mag[list(w)].sum() for w in windows]) / total
    control = float(window_shares.mean()) if windows else float("nan")  # live only: the clue may fill it
    percentile = float(stats.percentileofscore(window_shares, clue_share, kind="mean")) if windows else np.nan
    order = np.argsort(-mag[region], kind="stable")  # region-local indices, best first
    ranked = np.asarray(region)[order]
    best_rank = int(np.flatnonzero(np.isin(ranked, clue))[0]) + 1
    return Localisation(
        region=region_name,
        clue_share=float(clue_share),
        control_mean_share=control,
        difference_pp=float(100.0 * (clue_share - control)),
        best_rank=best_rank,
        percentile=percentile,
        n_windows=len(windows),
        forced_zero=tuple(int(i) for i in sorted(set(forced_zero) & set(full_region))),
        n_live=len(region),
        n_clue_live=len(clue),
        chance_rank_1=len(clue) / len(region),
    )
