"""The faithfulness study pooled over several swap studies (seeds, clones): the same computation
(``faithfulness.faithfulness``) over all their rows, each (study, role) its own trained model, so that the
cells hold the pooled counts, the McNemar test pairs every probe and the bootstrap resamples whole models.

Each study gives its ``faithfulness.parquet`` rows and its ``summary.json``'s ``faithfulness`` section. A
yardstick is validated pooled where every study's planted check passes, every study's models learned their
cues and the pooled decided probes name the training cue at ``faithfulness.RULE_AGREEMENT`` or more; a
method recovers a planted mechanism where it does in every study (the planted models are the same in all).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from xurs_pipeline.evaluation.swap.faithfulness import RULE_AGREEMENT, faithfulness
from xurs_pipeline.evaluation.swap.roles import ROLES
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS


def pooled_rows(studies: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Study label -> its rows -> one frame, probes and models named ``<label>/<id>``."""
    if not studies:
        raise ValueError("no swap studies to pool")
    return pd.concat([rows.assign(record_id=f"{label}/" + rows["record_id"].astype(str),
                                  model=f"{label}/" + rows["role"].astype(str))
                      for label, rows in studies.items()], ignore_index=True)  # fmt: skip


def pooled_validity(rows: pd.DataFrame, sections: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each yardstick's validity over the pooled rows (module docstring); ``sections``: label -> the study's
    ``faithfulness`` section."""
    cue = rows["role"].map({n: r.cue for n, r in ROLES.items()})
    one = rows["method"] == rows["method"].iloc[0]  # every method carries the same dependence
    out = {}
    for y in YARDSTICKS:
        decided = rows[one & (rows["yardstick"] == y) & (rows["depends_on"] > 0)]
        rule = float((decided["depends_on"] == cue[decided.index]).mean()) if len(decided) else float("nan")
        planted = all(s["yardsticks"][y]["planted"] for s in sections.values())
        learned = all(s["yardsticks"][y]["models_learned"] for s in sections.values())
        out[y] = {"planted": planted, "models_learned": learned, "rule_agreement": rule,
                  "validated": bool(planted and learned and rule >= RULE_AGREEMENT)}  # fmt: skip
    return out


def pooled_planted(sections: Mapping[str, dict[str, Any]]) -> pd.DataFrame:
    """(method, mechanism, recovered) in every study, as ``planted_methods.method_recovery`` lays it out."""
    found: dict[tuple[str, str], bool] = {}
    for section in sections.values():
        for method, by in section["methods"].items():
            for mechanism, ok in by.get("planted", {}).items():
                found[(method, mechanism)] = found.get((method, mechanism), True) and bool(ok)
    return pd.DataFrame([{"method": m, "mechanism": k, "recovered": ok} for (m, k), ok in found.items()],
                        columns=["method", "mechanism", "recovered"])  # fmt: skip


def pooled_faithfulness(
    studies: Mapping[str, tuple[pd.DataFrame, dict[str, Any]]], confidence: float = 0.95, seed: int = 0,
    resamples: int = 2000,
) -> dict[str, Any]:  # fmt: skip
    """Label -> (its ``faithfulness.parquet`` rows, its ``faithfulness`` section) -> the pooled result, in
    the shape of one study's (``faithfulness.faithfulness``)."""
    rows = pooled_rows({label: frame for label, (frame, _) in studies.items()})
    sections = {label: section for label, (_, section) in studies.items()}
    result = faithfulness(rows, pooled_validity(rows, sections), pooled_planted(sections), confidence, seed,
                          resamples)  # fmt: skip
    result["studies"] = list(studies)
    return result
