"""Numerical checks of attribution runs (Sec. 5.4, App. B.3-B.4, App. E step 4) from their artifacts.

- completeness: Eq. 9 residuals of every row (EG: Table 7's median/max) or of every prepared
  reference before averaging (IG: App. B.4's mean/max per reference);
- another run of the same questions (seed, sample count, collections): Table 7 (or the IG criteria)
  on values and rankings, and Table 6 on sections, top option, overlap and width;
- leave-one-collection-out (App. B.3): each average omitting one collection against the full average.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.artifacts import collection_keys, run_records
from xurs_pipeline.evaluation.comparisons import compare_runs, leave_one_out_runs
from xurs_pipeline.evaluation.config import NumericsThresholds, RankingThresholds
from xurs_pipeline.evaluation.verdicts import Check, numerics_checks, ranking_checks, residual_checks


@dataclass(frozen=True)
class CheckedRun:
    """One attribution run: its table and the directory holding ``coords/``."""

    name: str
    frame: pd.DataFrame
    directory: str | os.PathLike[str]

    @property
    def method(self) -> str:
        methods = sorted(set(self.frame["method"]))
        if len(methods) != 1:
            raise ValueError(f"run {self.name!r} mixes attribution methods {methods}")
        return methods[0]


def completeness_checks(run: CheckedRun, eg: NumericsThresholds, ig: NumericsThresholds) -> list[Check]:
    """Eq. 9 residuals against Table 7 (EG rows) or per reference against App. B.4 (IG)."""
    checks = []
    for reference, rows in run.frame.groupby("reference", sort=True):
        group = f"completeness_{run.method}_{reference}"
        if run.method == "ig":
            per_ref = np.concatenate([np.asarray(r, dtype=np.float64) for r in rows["reference_residual"]])
            checks += residual_checks(per_ref, ig, group)
        else:
            checks += residual_checks(rows["residual"].to_numpy(dtype=np.float64), eg, group)
    return checks


def comparison_checks(
    run: CheckedRun,
    other: CheckedRun,
    prompts: pd.DataFrame,
    eg: NumericsThresholds,
    ig: NumericsThresholds,
    ranking: RankingThresholds,
) -> tuple[pd.DataFrame, list[Check]]:
    """Per-question comparison of two runs (distances relative to ``other``) and its verdicts."""
    values = ig if run.method == "ig" else eg
    table = compare_runs(
        run_records(run.frame, prompts, run.directory),
        run_records(other.frame, prompts, other.directory),
        topks=sorted({values.topk, ranking.topk}),
        names=(run.name, other.name),
    )
    group = f"{run.name}_vs_{other.name}"
    checks = numerics_checks(table, values, f"values_{group}") + ranking_checks(
        table, ranking, f"ranking_{group}"
    )
    return table.assign(comparison=group), checks


def leave_one_out_checks(
    run: CheckedRun, prompts: pd.DataFrame, ranking: RankingThresholds
) -> tuple[pd.DataFrame, list[Check]]:
    """Table 6 on each leave-one-collection-out average against the full average (none for one collection)."""
    first = run.frame["coords_file"].iloc[0]
    keys = collection_keys(run.directory, first)
    if len(keys) < 2:
        return pd.DataFrame(), []
    per_collection = [run_records(run.frame, prompts, run.directory, key) for key in keys]
    full, omitted = leave_one_out_runs(per_collection)
    tables, checks = [], []
    for left, records in enumerate(omitted):
        table = compare_runs(records, full, topks=(ranking.topk,), names=(f"without_{left}", "all"))
        group = f"leave_out_collection_{left}"
        tables.append(table.assign(comparison=group))
        checks += ranking_checks(table, ranking, group)
    return pd.concat(tables, ignore_index=True), checks
