"""A sweep of training configurations side by side on their controlled-model gates (App. D.3).

Input: per experiment whose gates stage ran in it (``xurs_pipeline.experiments`` decides which did), its
name, its params (dotted keys) and its ``<artifacts>/gates/gates.json``. Output: one row per experiment:
its name, the params that differ between the rows, every gate value of one split (``valid_share`` over all
rows; ``familiar.<gate>`` and ``unseen.<gate>`` per wording-template group), whether every gate of that
split passed, and how many failed; fewest failures first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from xurs_pipeline.reporting.render import Column, TableSpec, fmt_float, fmt_text, fmt_yes_no

GATES_FILE = "gates.json"
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


def _split_gates(gates: Mapping[str, Any], split: str) -> tuple[Mapping[str, Any] | None, str]:
    """The ``split`` entry of one experiment's gates file, or None and why there is none."""
    if "skipped" in gates:
        return None, f"gates skipped: {gates['skipped']}"
    if not isinstance(gates.get(split), Mapping):
        splits = sorted(k for k in gates if not k.startswith("_"))
        return None, f"no {split!r} gates in {GATES_FILE} (has {splits}; see evaluation.gate_splits)"
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
    found: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]], split: str = "dev"
) -> Sweep:
    """The sweep table on ``split`` of ``found``: (name, dotted params, gates.json) per experiment."""
    names, params, gates, counts, left_out = [], [], [], [], {}
    for name, values, detail in found:
        entry, why = _split_gates(detail, split)
        if entry is None:
            left_out[name] = why
            continue
        names.append(name)
        params.append(dict(values))
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
