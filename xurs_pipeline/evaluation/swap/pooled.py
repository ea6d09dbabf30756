"""The faithfulness verdict over several swap studies (data seeds): the same computation
(``faithfulness.faithfulness``) over all their ledgers, each study its own cluster (``plan.CLUSTER``), so
that the cells hold the pooled counts with intervals clustered by seed and the paired tests combine the
seeds by the clustered McNemar test.

Each study gives its ``faithfulness.parquet`` rows and its ``summary.json``'s ``faithfulness`` section. A
yardstick judges pooled where it recovers the planted text models and every study's models learned their
cues; a method recovers a planted embedding mechanism where it does in every study. Studies run under
another analysis plan (``plan.plan_digest``) are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.faithfulness import faithfulness, validity
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS


def pooled_rows(studies: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Study label -> its ledger -> one ledger, ``study`` the label and probes named ``<label>/<id>``."""
    if not studies:
        raise ValueError("no swap studies to pool")
    return pd.concat(
        [
            rows.assign(study=label, record_id=f"{label}/" + rows["record_id"].astype(str))
            for label, rows in studies.items()
        ],
        ignore_index=True,
    )


def pooled_planted(sections: Mapping[str, dict[str, Any]]) -> pd.DataFrame:
    """(method, mechanism, recovered) in every study, as ``planted_methods.method_recovery`` lays it out."""
    found: dict[tuple[str, str], bool] = {}
    for section in sections.values():
        for method, by in section["methods"].items():
            for mechanism, ok in by.get("planted_embeddings", {}).items():
                found[(method, mechanism)] = found.get((method, mechanism), True) and bool(ok)
    return pd.DataFrame(
        [{"method": m, "mechanism": k, "recovered": ok} for (m, k), ok in found.items()],
        columns=["method", "mechanism", "recovered"],
    )


def same_plan(sections: Mapping[str, dict[str, Any]]) -> None:
    """ValueError naming the studies run under another analysis plan than this code's."""
    other = [label for label, s in sections.items() if s.get("plan_digest") != plan.plan_digest()]
    if other:
        raise ValueError(
            f"studies {other} were judged under another analysis plan than "
            f"{plan.plan_digest()} (docs/swap-plan.md): rerun their swap stage"
        )


def pooled_faithfulness(
    studies: Mapping[str, tuple[pd.DataFrame, dict[str, Any]]], confidence: float = 0.95
) -> dict[str, Any]:
    """Label -> (its ``faithfulness.parquet`` rows, its ``faithfulness`` section) -> the pooled result, in
    the shape of one study's (``faithfulness.faithfulness``)."""
    sections = {label: section for label, (_, section) in studies.items()}
    same_plan(sections)
    rows = pooled_rows({label: frame for label, (frame, _) in studies.items()})
    planted = {y: all(s["yardsticks"][y]["planted"] for s in sections.values()) for y in YARDSTICKS}
    learned = all(s["yardsticks"][y]["models_learned"] for s in sections.values() for y in YARDSTICKS)
    yardsticks = validity(rows, planted, learned, confidence)
    result = faithfulness(rows, yardsticks, pooled_planted(sections), confidence)
    result["studies"] = list(studies)
    return result
