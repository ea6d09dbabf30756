"""The App. D.3 gates of one trained model as a table and as flat metrics, from prompts + predictions only.

The ``gates`` stage runs right after ``predict`` (no attribution needed), so a sweep of training
configurations can be selected on dev gate values. One row per gate and split:

    split (train/dev/test), group (familiar | unseen: wording-template group; all: over every row),
    name, value, threshold, direction (">=" | "<="), n (rows or pairs measured), passed (bool)

and the metrics ``dvc exp show`` lists: ``{split: {familiar: {name: value}, unseen: {...},
valid_share: value, passed, n_failed, n_checks}}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from xurs_pipeline.evaluation.config import GateThresholds
from xurs_pipeline.evaluation.controlled import CONTROLLED_COLUMNS, controlled_predictions
from xurs_pipeline.evaluation.gates import gate_checks
from xurs_pipeline.evaluation.verdicts import json_safe

GATE_COLUMNS = {
    "split": "object",
    "group": "object",
    "name": "object",
    "value": "float64",
    "threshold": "float64",
    "direction": "object",
    "n": "int64",
    "passed": "bool",
}
ALL_ROWS = "all"  # group of gates measured over every row of a split (valid_share)
_PREFIX = "gates"


def applicable_splits(
    prompts: pd.DataFrame, predictions: pd.DataFrame, splits: Sequence[str]
) -> tuple[list[str], str]:
    """The splits of ``splits`` (``evaluation.gate_splits``) the gates can be computed on, and, when there
    are none, why ("" when there are some): prompts without the controlled-data columns (MedQA), or no
    predictions on those splits."""
    missing = [c for c in CONTROLLED_COLUMNS if c not in prompts.columns]
    if missing:
        sources = sorted(set(prompts["source"])) if "source" in prompts.columns else ["?"]
        return [], (
            f"prepared prompts (source {', '.join(sources)}) lack the controlled-data columns {missing}; "
            f"the App. D.3 gates need synthetic controlled data"
        )
    predicted = set(prompts.loc[prompts["record_id"].isin(predictions["record_id"]), "split"])
    present = [s for s in splits if s in predicted]
    if not present:
        return [], f"no predictions on evaluation.gate_splits={list(splits)} (predicted: {sorted(predicted)})"
    return present, ""


def empty_gate_frame() -> pd.DataFrame:
    """The gates table with no rows (data the gates do not apply to), with the schema's dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in GATE_COLUMNS.items()})


def gate_frame(
    prompts: pd.DataFrame, predictions: pd.DataFrame, th: GateThresholds, splits: Sequence[str]
) -> pd.DataFrame:
    """Every gate of :func:`~xurs_pipeline.evaluation.gates.gate_checks` on each of ``splits``, one row
    each (``splits`` from :func:`applicable_splits`)."""
    rows = []
    for split in splits:
        for check in gate_checks(controlled_predictions(prompts, predictions, split), th, _PREFIX):
            group = check.group.removeprefix(_PREFIX).removeprefix("_") or ALL_ROWS
            rows.append({**check.to_dict(), "split": split, "group": group})
    if not rows:
        return empty_gate_frame()
    return pd.DataFrame(rows)[list(GATE_COLUMNS)].astype(GATE_COLUMNS)


def gate_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Flat metrics per split: template groups' gate values, ``valid_share``, pass/fail counts (JSON-safe:
    a NaN value becomes null)."""
    out: dict[str, Any] = {}
    for split, rows in frame.groupby("split", sort=False):
        entry: dict[str, Any] = {}
        for row in rows.itertuples(index=False):
            (entry if row.group == ALL_ROWS else entry.setdefault(row.group, {}))[row.name] = row.value
        passed = rows["passed"].to_numpy(dtype=bool)
        entry.update(passed=bool(passed.all()), n_failed=int((~passed).sum()), n_checks=len(rows))
        out[str(split)] = entry
    return json_safe(out)


def verdict_group(split: str, group: str) -> str:
    """A gate row's group in the verdicts table: ``gates_<split>`` or ``gates_<split>_<group>``."""
    return f"{_PREFIX}_{split}" if group == ALL_ROWS else f"{_PREFIX}_{split}_{group}"
