"""The swap study across experiments (data seeds, reference counts): the method x experiment table with the
counts pooled over experiments.

Input: each experiment's ``<paths.artifacts>/swap/study/summary.json`` (``tasks/swap.py``), by experiment
name. Output: one row per compared method, then one per model for how often it behaves as trained. Per
experiment the behavioural agreement on the clear probes as ``k/n``; pooled over the experiments (the counts
summed, every probe of every experiment one trial) the training-rule swap accuracy, the agreement on all
decided probes and on the clear ones, the agreement on each model's probes (where a method fails: model A
depends on cue 1, model B on cue 2), each with its Wilson interval (``significance.wilson``): descriptions.
The verdict is the analysis plan's alone (docs/swap-plan.md), from the pooled ledger
(``evaluation/swap/pooled.py``, each study its own cluster): passes, fails or no verdict, and the weakest
(model, cue order) cell on the judging yardsticks (the lowest clustered low on the clear probes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from xurs_pipeline.evaluation.significance import proportion
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.roles import CUE_ROLES, ROLES
from xurs_pipeline.reporting.render import Column, TableSpec, fmt_text
from xurs_pipeline.reporting.swap_verdict import cell_name

SUMMARY = "swap/study/summary.json"  # under paths.artifacts, written by the swap stage
MEASURES = ("swap", "agreement", "agreement_clear", *(f"agreement_{role}" for role in ROLES))


def _pooled(counts: list[tuple[int, int]], prefix: str) -> dict[str, float | int]:
    return proportion(sum(c[0] for c in counts), sum(c[1] for c in counts), prefix)


def _count(measures: Mapping[str, Any], prefix: str) -> tuple[int, int]:
    return int(measures.get(f"{prefix}_k", 0)), int(measures.get(f"{prefix}_n", 0))


def sweep_table(studies: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Experiment name -> its swap ``summary.json`` => one row per method and per model (module docstring);
    methods in the order the first experiment lists them."""
    if not studies:
        raise ValueError("no swap study to compare")
    names = list(studies)
    methods = list(dict.fromkeys(m for s in studies.values() for m in s.get("methods", {})))
    rows = []
    for method in methods:
        row: dict[str, Any] = {"row": method}
        per = {name: studies[name].get("methods", {}).get(method) for name in names}
        for name, measures in per.items():
            k, n = _count(measures or {}, "agreement_clear")
            row[name] = f"{k}/{n}" if measures else "—"
        for prefix in MEASURES:
            row.update(_pooled([_count(m, prefix) for m in per.values() if m], prefix))
        rows.append(row)
    for role in CUE_ROLES:
        row = {"row": f"model {role} behaves as trained"}
        counts = [
            (int(s["behaves_as_trained"][role]["k"]), int(s["behaves_as_trained"][role]["n"]))
            for s in studies.values()
        ]
        row.update({name: f"{k}/{n}" for name, (k, n) in zip(names, counts, strict=True)})
        row.update(_pooled(counts, "agreement"))
        rows.append(row)
    return pd.DataFrame(rows)


def with_faithfulness(frame: pd.DataFrame, result: Mapping[str, Any] | None) -> pd.DataFrame:
    """:func:`sweep_table` with per method ``verdict`` and ``weakest_text`` from the pooled faithfulness
    (``pooled.pooled_faithfulness``'s result; dashes where a study has none)."""
    methods = (result or {}).get("methods", {})
    judges = list((result or {}).get("judges", []))
    out = frame.copy()
    out["verdict"] = [methods[r]["verdict"] if r in methods else "—" for r in out["row"]]
    out["weakest_text"] = [_weakest(methods[r], judges) if r in methods else "—" for r in out["row"]]
    return out


def _weakest(by: Mapping[str, Any], judges: list[str]) -> str:
    """``yardstick, model R, cue o first: value [low, high] (k/n)`` of the cell with the lowest clustered low
    on the clear probes among the (model, order) cells of the judging yardsticks (no clear probe: lowest)."""
    cells = [(y, name, c) for y in judges for name, c in by[y]["cells"].items() if "_order" in name]
    if not cells:
        return "no yardstick judges"
    y, name, c = min(cells, key=lambda t: (t[2]["clear_low"] if t[2]["clear_n"] else -1.0, t[0], t[1]))
    if not c["clear_n"]:
        return f"{y}, {cell_name(name)}: no clear probe"
    return (
        f"{y}, {cell_name(name)}: {c['clear']:.2f} [{c['clear_low']:.2f}, {c['clear_high']:.2f}] "
        f"({c['clear_k']}/{c['clear_n']})"
    )


def _interval(row: Mapping[str, Any], prefix: str) -> str:
    """``value [low, high] (k/n)`` of one pooled measure of a :func:`sweep_table` row."""
    if pd.isna(row.get(prefix)):
        return "—"
    k, n = int(row[f"{prefix}_k"]), int(row[f"{prefix}_n"])
    return f"{row[prefix]:.2f} [{row[f'{prefix}_low']:.2f}, {row[f'{prefix}_high']:.2f}] ({k}/{n})"


def sweep_spec(names: list[str]) -> TableSpec:
    """How :func:`sweep_table` renders (Markdown, LaTeX, CSV via ``render.write_table``)."""
    return TableSpec(
        "swap_sweep",
        "SwapSweepRows",
        "The swap control across experiments: per method the behavioural agreement on the clear probes in "
        "each experiment (k/n), and pooled over them the training-rule swap accuracy, the agreement on all "
        "decided probes, on the clear ones and on each model's probes with Wilson intervals (k/n); the "
        "analysis plan's verdict on the pooled studies (docs/swap-plan.md: every (model, cue order) cell of "
        f"every judging yardstick at >= {plan.AGREEMENT_PASS:g} with its clustered lower bound >= "
        f"{plan.AGREEMENT_PASS_LOWER:g}, and above the label rankers by a paired test) and the weakest such "
        "cell; then how often each model depends on the cue it was trained on (pooled in the agreement "
        "column).",
        [
            Column("row", "Method", fmt_text, align="l"),
            *[Column(name, name, fmt_text) for name in names],
            Column("swap_text", "Swap accuracy, pooled", fmt_text),
            Column("agreement_text", "Agreement, pooled", fmt_text),
            Column("agreement_clear_text", "Agreement (clear), pooled", fmt_text),
            *[Column(f"agreement_{role}_text", f"Agreement, model {role}", fmt_text) for role in ROLES],
            Column("verdict", "Verdict, pooled", fmt_text),
            Column("weakest_text", "Weakest judging cell (clear probes), pooled", fmt_text),
        ],
    )


def rendered(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`sweep_table` with each pooled measure as one ``value [low, high] (k/n)`` text column."""
    out = frame.copy()
    for prefix in MEASURES:
        out[f"{prefix}_text"] = [_interval(row, prefix) for row in frame.to_dict(orient="records")]
    return out
