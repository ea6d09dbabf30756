"""Controlled-data predictions and their pairings, from prepared prompts + predictions (App. D.2-D.3).

Uses the synthetic columns of the prompts contract: ``pair_id`` (shared by the versions with and
without the distinguishing result), ``has_result``, ``detail`` (the irrelevant detail; "" when the data
has none), ``arrangement`` r (displayed option k shows base option (k + r) mod 4), ``template_id``,
``template_unseen``, ``family``, ``target_masses``. V2's ``pair_id`` is
``<case>_t<template>_<detail>_a<arrangement>``; the case is what remains without that suffix.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.gates import ControlledPredictions
from xurs_pipeline.io import ArtifactError

CONTROLLED_COLUMNS = ("family", "pair_id", "has_result", "template_unseen", "arrangement", "target_masses")


def _case(row: pd.Series) -> str:
    suffix = f"_t{row.get('template_id', '')}_{row.get('detail', '')}_a{row['arrangement']}"
    pair = str(row["pair_id"])
    return pair[: -len(suffix)] if pair.endswith(suffix) else pair


def _pairs(frame: pd.DataFrame, key: list[str], column: str, base: Hashable | None) -> np.ndarray:
    """(k, 2) positional pairs: within each ``key`` group, the row whose ``column`` is ``base`` (or the
    first row) against every other row of the group with a different ``column`` value."""
    out = []
    for _, group in frame.groupby(key, sort=False):
        if group[column].nunique() < 2:
            continue
        first = group[group[column] == base] if base is not None else group.iloc[:1]
        if len(first) != 1:
            continue
        anchor = first.iloc[0]
        for pos, row in zip(group["_pos"], group.itertuples(index=False), strict=True):
            if getattr(row, column) != anchor[column]:
                out.append((int(anchor["_pos"]), int(pos)))
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


def controlled_predictions(
    prompts: pd.DataFrame, predictions: pd.DataFrame, split: str
) -> ControlledPredictions:
    """The predictions of split ``split`` with their result / detail / arrangement pairings."""
    missing = [c for c in CONTROLLED_COLUMNS if c not in prompts.columns]
    if missing:
        raise ArtifactError(
            f"prepared prompts lack the controlled-data columns {missing}: not synthetic data"
        )
    rows = prompts[prompts["split"] == split].merge(
        predictions[["record_id", "masses"]], on="record_id", how="inner", validate="one_to_one"
    )
    if rows.empty:
        raise ArtifactError(f"no predictions for controlled split {split!r} (evaluation.gate_splits)")
    rows = rows.reset_index(drop=True)
    rows["_pos"] = np.arange(len(rows))
    rows["_case"] = rows.apply(_case, axis=1)
    for col in ("detail", "template_id"):
        if col not in rows.columns:
            rows[col] = ""
    r = rows["arrangement"].to_numpy(dtype=np.int64)
    return ControlledPredictions(
        pred=np.stack(rows["masses"].to_numpy()).astype(np.float64),
        target=np.stack(rows["target_masses"].to_numpy()).astype(np.float64),
        answer=rows["answer_idx"].to_numpy(dtype=np.int64),
        has_result=rows["has_result"].to_numpy(dtype=bool),
        template_unseen=rows["template_unseen"].to_numpy(dtype=bool),
        family=rows["family"].astype(str).to_numpy(),
        perms=(np.arange(4)[None, :] + r[:, None]) % 4,
        result_pairs=_pairs(rows, ["pair_id"], "has_result", True),
        irrelevant_pairs=_pairs(rows, ["_case", "template_id", "arrangement", "has_result"], "detail", None),
        arrangement_pairs=_pairs(rows, ["_case", "template_id", "detail", "has_result"], "arrangement", 0),
    )
