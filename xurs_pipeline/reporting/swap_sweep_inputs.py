"""What a swap sweep pooled, kept beside its table so that the table is rebuilt with no DVC cache.

One small JSON file per pooled study, ``<out>/<stem>.inputs/<nn>.json``: its column name, where it came
from, its params (dotted keys), its swap ``summary.json`` and its ``faithfulness.parquet`` rows
(``evaluation/swap/faithfulness.scored``) in the columns the pooled faithfulness reads
(:data:`ROW_COLUMNS`), column-wise, NaN as null. ``xurs swap-sweep --kept <dir>`` reads them back; the
command builds every table from this form, so a table and its rebuild from the kept files are the same.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.evaluation.verdicts import json_safe

ROW_COLUMNS = (
    "method",
    "yardstick",
    "role",
    "record_id",
    "top",
    "depends_on",
    "margin",
    "agrees",
    "clear",
    "departs",
    "order",
)
KEYS = ("column", "where", "params", "summary", "faithfulness_rows")


def kept(column: str, where: str, params: Mapping[str, Any], summary: Any, rows: pd.DataFrame | None):
    """One study's kept form (module docstring), as JSON would read it back (NaN as None)."""
    columns = None if rows is None else {c: rows[c].tolist() for c in ROW_COLUMNS}
    body = {
        "column": column,
        "where": where,
        "params": dict(sorted(params.items())),
        "summary": summary,
        "faithfulness_rows": columns,
    }
    return json.loads(json.dumps(json_safe(body), allow_nan=False, default=str))


def write_kept(directory: Path, studies: list[dict[str, Any]]) -> Path:
    """The studies' files in ``directory`` (replaced whole: no earlier sweep's study is left in it)."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i, study in enumerate(studies, start=1):
        (tmp / f"{i:02d}.json").write_text(json.dumps(study, sort_keys=True, separators=(",", ":")) + "\n")
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)
    return directory


def faithfulness_inputs(studies: list[dict[str, Any]]) -> dict[str, tuple[pd.DataFrame, dict[str, Any]]]:
    """Column -> (its faithfulness rows, its summary's ``faithfulness`` section), for
    ``evaluation.swap.pooled.pooled_faithfulness``; empty where any study lacks either (an older swap
    stage), so that nothing is pooled over part of the studies."""
    out = {}
    for study in studies:
        section = study["summary"].get("faithfulness")
        if not study["faithfulness_rows"] or not section:
            return {}
        rows = pd.DataFrame(study["faithfulness_rows"], columns=list(ROW_COLUMNS))
        out[study["column"]] = (rows.assign(agrees=rows["agrees"].astype(float)), section)
    return out
