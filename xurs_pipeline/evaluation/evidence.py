"""Reference endpoints (Eq. 10) and clue localisation (App. C) of an attribution run's rows.

Endpoint checks apply to rows attributed against the aligned paired prompt: ``w_with`` is the input
width, ``w_without`` the paired prompt's natural width and ``w_aligned`` its prepared width under the
original mask and positions. Localisation applies to rows whose prompt marks a clue
(``clue_positions``): the regions are all active text (every non-special token) and the case
description (``case_positions``). Positions forced to zero are those whose prepared reference token
equals the input token (aligned references) or, for other references, whose attribution is exactly 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.artifacts import prompts_by_id
from xurs_pipeline.evaluation.bootstrap import mean_advantage_interval
from xurs_pipeline.evaluation.localisation import clue_localisation
from xurs_pipeline.evaluation.references import EndpointCheck, endpoint_check
from xurs_pipeline.evaluation.significance import wilson

INACTIVE_SECTIONS = ("special", "padding")


def _first(values: object, what: str, record_id: str) -> float:
    seq = list(values) if values is not None else []
    if not seq or seq[0] is None:
        raise ValueError(f"record {record_id!r}: the attribution row has no {what}")
    return float(seq[0])


def endpoint_checks(frame: pd.DataFrame, warn_above: float) -> list[EndpointCheck]:
    """Eq. 10 for every aligned-reference row (IG: the residual of that one reference; EG: the row's)."""
    out = []
    for row in frame[frame["reference"] == "aligned"].itertuples(index=False):
        rid = str(row.record_id)
        residual = (
            _first(row.reference_residual, "reference residual", rid) if row.method == "ig" else row.residual
        )
        out.append(
            endpoint_check(
                f"{rid}:c{row.target}",
                float(row.width_input),
                _first(row.width_reference_natural, "natural reference width", rid),
                _first(row.width_reference_prepared, "prepared reference width", rid),
                float(residual),
                warn_above,
            )
        )
    return out


def _forced_zero(row: object, input_ids: np.ndarray, magnitude: np.ndarray) -> list[int]:
    prepared = np.asarray(row.prepared_input_ids, dtype=np.int64)  # type: ignore[attr-defined]
    if prepared.size == input_ids.size:
        return np.flatnonzero(prepared == input_ids).tolist()
    return np.flatnonzero(magnitude == 0).tolist()


def localisation_table(
    frame: pd.DataFrame, prompts: pd.DataFrame, live: Mapping[str, Sequence[int]] | None = None
) -> pd.DataFrame:
    """App. C measurements for every row whose prompt has a clue, in both regions (a region without any
    attribution magnitude gets a row with only a ``note``: its shares are undefined).

    ``frame``: record_id, target, reference, token_magnitude (seq,) per row (and prepared_input_ids,
    used without ``live``). ``live``: per record id, the positions that can take attribution
    (``nulls.live_positions`` of the references as prepared); given, every statistic counts only them
    and each row carries ``chance_rank_1``, the rank-1 probability of random scores."""
    if "clue_positions" not in prompts.columns or frame.empty:
        return pd.DataFrame()
    by_id = prompts_by_id(prompts, list(frame["record_id"]), "attribution run")
    rows = []
    for row in frame.itertuples(index=False):
        prompt = by_id.loc[row.record_id]
        clue = [int(i) for i in prompt["clue_positions"]]
        if not clue:
            continue
        magnitude = np.asarray(row.token_magnitude, dtype=np.float64)
        sections = np.asarray(prompt["sections"])
        regions = {
            "all_text": np.flatnonzero(~np.isin(sections, INACTIVE_SECTIONS)).tolist(),
            "case_text": [int(i) for i in prompt["case_positions"]],
        }
        alive = None if live is None else sorted(int(i) for i in live[str(row.record_id)])
        if alive is None:
            zero = _forced_zero(row, np.asarray(prompt["input_ids"], dtype=np.int64), magnitude)
        else:
            zero = sorted(set(range(magnitude.size)) - set(alive))
        for name, region in regions.items():
            key = {
                "record_id": row.record_id,
                "target": row.target,
                "reference": row.reference,
                "region": name,
            }
            if magnitude[region].sum() == 0:  # nothing attributed (e.g. a saturated width): shares undefined
                rows.append({**key, "note": "all-zero attribution in the region"})
                continue
            if alive is not None and not set(clue) & set(alive):
                rows.append({**key, "note": "no clue position can take attribution"})
                continue
            loc = clue_localisation(magnitude, region, clue, name, zero, str(row.record_id), alive)
            rows.append({**key, **loc.to_dict(), "note": ""})
    return pd.DataFrame(rows)


def localisation_summary(
    table: pd.DataFrame, resamples: int, confidence: float, method: str, seed: int
) -> dict[str, dict[str, float | int]]:
    """App. C over all explained questions, per region: the mean clue share and the mean difference to
    the control windows (pp) with its question-level bootstrap interval (``mean_advantage_interval`` on the
    paired clue and control-window shares), the median best clue rank and the share of questions whose
    best clue token ranks first. Empty when no row was measured."""
    if table.empty or "clue_share" not in table.columns:
        return {}
    out: dict[str, dict[str, float | int]] = {}
    for region, rows in table.dropna(subset=["clue_share"]).groupby("region", sort=False):
        paired = rows.dropna(subset=["control_mean_share"])  # live only: a clue may leave no window
        clue, control = 100 * paired["clue_share"].to_numpy(), 100 * paired["control_mean_share"].to_numpy()
        ci = (
            mean_advantage_interval(clue, control, resamples, confidence, method, seed)
            if len(paired)
            else None
        )
        nan = float("nan")
        out[str(region)] = {
            "questions": len(rows),
            "mean_clue_share_pct": float(100 * rows["clue_share"].mean()),
            "mean_difference_pp": ci.mean if ci else nan,
            "ci_low": ci.low if ci else nan,
            "ci_high": ci.high if ci else nan,
            "median_best_rank": float(rows["best_rank"].median()),
            "best_rank_1_share": float((rows["best_rank"] == 1).mean()),
            **_live_positions(rows, len(paired)),
        }
    return out


def _live_positions(rows: pd.DataFrame, paired: int) -> dict[str, float | int]:
    """Where live positions were counted: the questions with control windows, the rank-1 base rate and the
    median live positions and live clue positions; nothing otherwise."""
    if "chance_rank_1" not in rows.columns or not rows["chance_rank_1"].notna().any():
        return {}
    return {
        "questions_with_windows": paired,
        "base_rate_rank_1": float(rows["chance_rank_1"].mean()),
        "median_live_positions": float(rows["n_live"].median()),
        "median_live_clue_positions": float(rows["n_clue_live"].median()),
    }


def localisation_by_target(
    frame: pd.DataFrame,
    prompts: pd.DataFrame,
    resamples: int,
    confidence: float,
    method: str,
    seed: int,
    live: Mapping[str, Sequence[int]] | None = None,
) -> pd.DataFrame:
    """Which target function's attribution finds the clue (the comparison the paper leaves to future work,
    Sec. 7): App. C localisation of each target's rows, one row per (target_fn, region).

    ``frame``: the attribution rows of every target function (column ``target_fn``: the main run's and the
    ``attribute_targets`` runs', same engine, references and budget). Each row carries
    :func:`localisation_summary`'s fields, the Wilson interval of the share of questions whose best clue
    token ranks first (``significance.wilson``), and the completeness residual R (Eq. 9) of that
    target's rows (median, max), so that targets are compared at their attained tolerance. Empty without a
    clue or with a single target function. ``live``: per record id, the positions that can take
    attribution (the checks stage's ``details/live_positions``), counted as :func:`localisation_table` does.
    """
    if "target_fn" not in frame.columns or frame["target_fn"].nunique() < 2:
        return pd.DataFrame()
    rows = []
    for fn, runs in frame.groupby("target_fn", sort=True):
        table = localisation_table(runs, prompts, live)
        summary = localisation_summary(table, resamples, confidence, method, seed)
        for region, m in summary.items():
            measured = table[(table["region"] == region)].dropna(subset=["clue_share"])
            ci = wilson((measured["best_rank"] == 1).tolist(), confidence)
            residual = {
                "residual_median": float(runs["residual"].median()),
                "residual_max": float(runs["residual"].max()),
            }
            intervals = {"ci": (m["ci_low"], m["ci_high"]), "rank_1_ci": (float(ci.low), float(ci.high))}
            rows.append({"target_fn": fn, "region": region, **m, **intervals, **residual})
    return pd.DataFrame(rows)
