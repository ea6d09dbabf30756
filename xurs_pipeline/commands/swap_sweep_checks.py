"""What every swap study passes before ``xurs swap-sweep`` pools it, whatever its source: an experiment, a
``--project`` directory or a ``--kept`` file (``reporting/swap_sweep_inputs.py``'s form, which the other two
are turned into first, so that all three meet the same checks).

A kept study: its keys (``KEYS``) with their types; its summary's counts (:func:`study_error`: integers,
0 <= k <= n); its faithfulness rows, absent (an older swap stage) or every column of ``ROW_COLUMNS`` with
one value per row, of that column's type (:data:`ROW_TYPES`). Then, over the studies together
(``experiments/pooling.py``): no source twice, no content twice (the counts, the faithfulness section and
rows: a copy with a key added elsewhere is the same study), no two columns of one name, and no two studies
whose settings differ in a key that can change a result unless the sweep's labels name it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from xurs_pipeline.evaluation.swap.roles import CUE_ROLES
from xurs_pipeline.experiments.pooling import Source, check_poolable
from xurs_pipeline.reporting.swap_sweep_inputs import KEYS, ROW_COLUMNS

_TEXT, _FLAG, _WHOLE, _NUMBER = "text", "true/false", "an integer", "a number or null"
# each faithfulness row column's type in the kept form (JSON: NaN is null)
ROW_TYPES = {
    "method": _TEXT,
    "yardstick": _TEXT,
    "role": _TEXT,
    "record_id": _TEXT,
    "top": _WHOLE,
    "depends_on": _WHOLE,
    "margin": _NUMBER,
    "agrees": _NUMBER,
    "clear": _FLAG,
    "departs": _FLAG,
    "order": _WHOLE,
}


def study_error(study: Any) -> str:
    """Why a swap ``summary.json`` cannot be pooled (``""`` when it can): skipped, no method comparison,
    or a count that is not one (``k`` and ``n`` integers, 0 <= k <= n; a method's measure may lack both,
    as one without probes of a role does, but not one of them; each model's behaviour needs both)."""
    from xurs_pipeline.reporting.swap_sweep import MEASURES

    if not isinstance(study, dict):
        return "not a JSON object"
    if "skipped" in study:
        return f"the swap stage skipped it ({study['skipped']})"
    methods, behaviour = study.get("methods"), study.get("behaves_as_trained")
    if not isinstance(methods, dict) or not methods or not isinstance(behaviour, dict):
        return "no method comparison or behaves_as_trained (written by an older swap stage?)"
    counts = [(f"methods.{m}.{p}", v, f"{p}_", True) for m, v in methods.items() for p in MEASURES]
    counts += [(f"behaves_as_trained.{role}", behaviour.get(role), "", False) for role in CUE_ROLES]
    for where, measures, prefix, optional in counts:
        k, n = (measures.get(f"{prefix}{c}") if isinstance(measures, dict) else None for c in "kn")
        if optional and isinstance(measures, dict) and k is None and n is None:
            continue
        if not (_count(k) and _count(n) and k <= n):
            return f"{where}: {prefix}k={k!r}, {prefix}n={n!r} are not counts (integers, 0 <= k <= n)"
    return ""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is(kind: str, value: Any) -> bool:
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _FLAG:
        return isinstance(value, bool)
    if kind == _WHOLE:
        return isinstance(value, int) and not isinstance(value, bool)
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def rows_error(rows: Any) -> str:
    """Why kept faithfulness rows cannot be pooled (``""`` when they can): not null or a mapping of every
    column of ``ROW_COLUMNS`` to one list, the lists of unequal lengths, or a value of another type."""
    if rows is None:
        return ""
    if not isinstance(rows, dict) or set(rows) != set(ROW_COLUMNS):
        got = sorted(rows) if isinstance(rows, dict) else type(rows).__name__
        return f"faithfulness_rows: must map each of {list(ROW_COLUMNS)} to a list (got {got})"
    lengths = {len(v) if isinstance(v, list) else -1 for v in rows.values()}
    if len(lengths) != 1 or -1 in lengths:
        return "faithfulness_rows: every column must be a list, all of one length"
    for column, kind in ROW_TYPES.items():
        bad = next((i for i, value in enumerate(rows[column]) if not _is(kind, value)), None)
        if bad is not None:
            return f"faithfulness_rows.{column}[{bad}]={rows[column][bad]!r}: must be {kind}"
    return ""


def kept_error(study: Any) -> str:
    """Why a kept study cannot be pooled (``""`` when it can): a missing key or one of another type, its
    summary's counts (:func:`study_error`) or its faithfulness rows (:func:`rows_error`)."""
    if not isinstance(study, dict):
        return "not a kept swap study (a JSON object)"
    missing = [k for k in KEYS if k not in study]
    if missing:
        return f"not a kept swap study (missing {', '.join(missing)})"
    for key in ("column", "where"):
        if not isinstance(study[key], str) or not study[key]:
            return f"{key}={study[key]!r}: must be a name (text)"
    params = study["params"]
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        return "params: must map dotted keys to values"
    why = study_error(study["summary"])
    return f"summary: {why}" if why else rows_error(study["faithfulness_rows"])


def pooled_content(summary: dict[str, Any], rows: Any) -> dict[str, Any]:
    """What pooling counts of a study: the methods' and models' counts, the faithfulness section and rows (a
    key added anywhere else changes nothing pooled: such a copy is the same study)."""
    keys = ("methods", "behaves_as_trained", "faithfulness")
    return {**{key: summary.get(key) for key in keys}, "faithfulness_rows": rows}


def read_kept(directory: str | Path) -> list[dict[str, Any]]:
    """The kept studies of ``directory``, in file order, checked one by one and together
    (:func:`check_studies`, with the labels every column is named by); ValueError naming the file."""
    files = sorted(Path(directory).glob("*.json"))
    if not files:
        raise ValueError(f"--kept {directory}: no kept study (*.json) there")
    studies = []
    for file in files:
        try:
            studies.append(json.loads(file.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{file}: not JSON ({err})") from err
    check_studies(studies, [str(file) for file in files])
    labels = set.intersection(*(column_labels(s["column"], s["params"]) for s in studies))
    check_studies(studies, [f"{file} ({s['where']})" for s, file in zip(studies, files, strict=True)], labels)
    return studies


def column_labels(column: str, params: dict[str, Any]) -> set[str]:
    """The params a kept column is named by (``data.seed=6, train.seed=7 (b)``: data.seed and train.seed)."""
    return {key for key in re.findall(r"(?:^|, )([^=,\s]+)=", column) if key in params}


def check_studies(studies: list[Any], places: list[str], labels: Collection[str] | None = None) -> None:
    """ValueError naming the place (a file, an experiment, a directory) of the first study that cannot be
    pooled (:func:`kept_error`); with ``labels``, also of studies that cannot be pooled together: two of
    one column, and what pooling refuses (``pooling.check_poolable``: one source or content twice, other
    settings than the ``labels`` keys)."""
    for study, place in zip(studies, places, strict=True):
        why = kept_error(study)
        if why:
            raise ValueError(f"{place}: {why}")
    if labels is None:
        return
    seen: dict[str, str] = {}
    for study, place in zip(studies, places, strict=True):
        if study["column"] in seen:
            raise ValueError(
                f"{seen[study['column']]} and {place} are both column {study['column']!r}: one study would "
                "hide the other; keep each column once"
            )
        seen[study["column"]] = place
    sources = [
        Source(
            s["column"], place, s["where"], s["params"], pooled_content(s["summary"], s["faithfulness_rows"])
        )
        for s, place in zip(studies, places, strict=True)
    ]
    check_poolable(sources, sorted(labels))
