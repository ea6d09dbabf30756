"""A sweep of training configurations side by side on their controlled-model gates (App. D.3).

Input: the output of ``dvc exp show --json`` (DVC 3.x), a list with one entry per baseline commit and one
for the workspace (``dvc.repo.experiments.serialize.ExpState``)::

    [{"rev": "workspace" | <sha>, "name": <branch> | None, "error": {"msg", "type"} | None,
      "data": {"params": {<file>: {"data": {...}}}, "metrics": {<file>: {"data": {...}} | {"error": ...}},
               "timestamp", "deps", "outs", "meta"},
      "experiments": [{"name", "executor": {"state": "queued" | "running" | "failed" | "success"} | None,
                       "revs": [<ExpState of the experiment>]}] | None}]

Output: one row per experiment (and per baseline commit with gate metrics): its name, the params that
differ between the rows, every gate value of one split from ``<artifacts>/gates/gates.json`` (``valid_share``
over all rows; ``familiar.<gate>`` and ``unseen.<gate>`` per wording-template group), whether every gate
of that split passed, and how many failed; fewest failures first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from xurs_pipeline.reporting.render import Column, TableSpec, fmt_float, fmt_text, fmt_yes_no

GATES_METRICS = "gates/gates.json"  # under paths.artifacts, written by the gates stage
MISSING = "—"
_COUNTS = ("passed", "n_failed", "n_checks")


@dataclass(frozen=True)
class Sweep:
    """frame: one row per experiment (columns ``name``, ``params``, ``gates``, ``passed``, ``n_failed``);
    left_out: experiment name -> why it has no row (queued, failed, gates skipped, ...)."""

    split: str
    frame: pd.DataFrame
    params: list[str]
    gates: list[str]
    left_out: dict[str, str] = field(default_factory=dict)


def experiment_states(
    show: Sequence[Mapping[str, Any]], workspace: bool
) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """(name, ExpState, executor state or "") of each baseline commit (the workspace only with
    ``workspace``) and each experiment."""
    for baseline in show:
        if baseline["rev"] == "workspace":
            if workspace:
                yield "workspace", baseline, ""
        else:
            yield str(baseline.get("name") or baseline["rev"][:7]), baseline, ""
        for exp_range in baseline.get("experiments") or []:
            executor = (exp_range.get("executor") or {}).get("state", "")
            for state in exp_range.get("revs") or []:
                name = state.get("name") or exp_range.get("name") or state["rev"][:7]
                yield str(name), state, executor


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested params -> dotted keys (``{'data': {'seed': 6}}`` -> ``{'data.seed': 6}``)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def experiment_params(state: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted params of one experiment state of ``dvc exp show --json``."""
    return _params(state.get("data") or {})


def _params(data: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted param keys of every params file (``params.yaml`` keys bare, others ``<file>:key`` as DVC)."""
    out: dict[str, Any] = {}
    for path, result in (data.get("params") or {}).items():
        out.update(flatten(result.get("data") or {}, "" if path == "params.yaml" else f"{path}:"))
    return out


def readable_error(error: Any, path: str) -> str:
    """DVC's error record of a metrics file or experiment as a sentence, not raw errno text."""
    msg = str(error.get("msg", error) if isinstance(error, Mapping) else error)
    if "Errno 2]" in msg or "No such file" in msg:
        return f"{path} not found (its stage did not run in this experiment, or the run failed before it)"
    return re.sub(r"^\[Errno \d+\]\s*", "", msg) or "unreadable"


Detail = Callable[[Mapping[str, Any]], tuple[Mapping[str, Any] | None, str]]


def _split_gates(
    state: Mapping[str, Any], split: str, detail: Detail | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The ``split`` entry of the state's gates metrics, or None and why there is none. Where the gates
    file is not among the state's DVC metrics (it is a detail file; DVC shows only the headline),
    ``detail(state)`` reads it: (content, path) or (None, why)."""
    if state.get("error"):
        return None, f"dvc: {readable_error(state['error'], 'the experiment')}"
    metrics = (state.get("data") or {}).get("metrics") or {}
    found = [p for p in metrics if p == GATES_METRICS or p.endswith(f"/{GATES_METRICS}")]
    if found:
        result, where = metrics[found[0]], found[0]
        if "data" not in result:
            return None, readable_error(result.get("error", {}), where)
        gates = result["data"]
    elif detail is not None:
        gates, where = detail(state)
        if gates is None:
            return None, where
    else:
        return None, f"no {GATES_METRICS} metrics (did the gates stage run?)"
    if "skipped" in gates:
        return None, f"gates skipped: {gates['skipped']}"
    if split not in gates:
        splits = sorted(k for k in gates if not k.startswith("_"))
        return None, f"no {split!r} gates in {where} (has {splits}; see evaluation.gate_splits)"
    return gates[split], ""


def _gate_values(entry: Mapping[str, Any]) -> dict[str, float]:
    """``valid_share`` and ``<group>.<gate>`` values of one split's entry (null -> NaN)."""
    values = {}
    for key, value in entry.items():
        if isinstance(value, Mapping):
            values.update({f"{key}.{name}": v for name, v in value.items()})
        elif key not in _COUNTS:
            values[key] = value
    return {k: float("nan") if v is None else float(v) for k, v in values.items()}


def _differing(rows: list[dict[str, Any]]) -> list[str]:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return [k for k in keys if len({json.dumps(row.get(k, MISSING), sort_keys=True) for row in rows}) > 1]


def sweep_frame(
    show: Sequence[Mapping[str, Any]],
    split: str = "dev",
    workspace: bool = False,
    detail: Detail | None = None,
) -> Sweep:
    """The sweep table of ``dvc exp show --json`` output ``show`` on ``split`` (see the module docstring);
    ``detail`` reads an experiment's gates file where DVC's output does not carry it."""
    if not isinstance(show, Sequence) or not all(isinstance(s, Mapping) and "rev" in s for s in show):
        raise ValueError("not `dvc exp show --json` output: expected a list of objects with a 'rev' key")
    names, params, gates, counts, left_out = [], [], [], [], {}
    for name, state, executor in experiment_states(show, workspace):
        entry, why = _split_gates(state, split, detail)
        if entry is None:
            left_out[name] = why if executor in ("", "success") else f"experiment {executor}: {why}"
            continue
        names.append(name)
        params.append(_params(state.get("data") or {}))
        gates.append(_gate_values(entry))
        counts.append({"passed": bool(entry.get("passed")), "n_failed": int(entry.get("n_failed", 0))})
    param_keys = _differing(params)
    gate_keys = sorted(dict.fromkeys(k for g in gates for k in g), key=lambda k: ("." in k, k))
    rows = [
        {"name": n, **{k: p.get(k, MISSING) for k in param_keys}, **g, **c}
        for n, p, g, c in zip(names, params, gates, counts, strict=True)
    ]
    columns = ["name", *param_keys, *gate_keys, "passed", "n_failed"]
    frame = pd.DataFrame(rows, columns=columns).sort_values("n_failed", kind="stable", ignore_index=True)
    return Sweep(split, frame, param_keys, gate_keys, left_out)


def sweep_spec(sweep: Sweep) -> TableSpec:
    """How :func:`sweep_frame`'s table renders (Markdown, LaTeX, CSV via ``render.write_table``)."""
    return TableSpec(
        "gates_sweep",
        "GatesSweepRows",
        f"Controlled-model gates (App. D.3) on the {sweep.split} split per DVC experiment: the parameters "
        f"that differ, each gate's value (valid_share over all predictions; familiar/unseen wording "
        f"templates), whether every {sweep.split} gate passed and how many failed.",
        [
            Column("name", "Experiment", align="l"),
            *[Column(k, k, fmt_text, align="l") for k in sweep.params],
            *[Column(k, k, fmt_float(4)) for k in sweep.gates],
            Column("passed", "Passed", fmt_yes_no),
            Column("n_failed", "Failed"),
        ],
    )
