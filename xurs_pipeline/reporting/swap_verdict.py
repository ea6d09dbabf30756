"""The report's swap verdict, "Follows what each model learned?", answered from the faithfulness study
(``evaluation/swap/faithfulness.py``, issue 53): the run's method (the ``paper`` row, read from the attribute
stages' runs under ``attribution.method``) against what each model *does*, on the validated yardsticks, per
model and cue order, on this run's one data seed.

"yes" only where the faithfulness study calls the method trustworthy (every (model, order) cell of every
validated yardstick passes and every planted mechanism is recovered); "no" where a validated cell fails;
"not shown" where every cell passes but a planted mechanism is missed or cannot be checked (the planted
models cannot run the attribute stages' estimator); "n/a" where the summary has no faithfulness study or no
yardstick is validated. The training rule's swap accuracy is shown beside it, labelled as such: it measures
agreement with the labels' rule, not with the model, so it is never the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xurs_pipeline.attribution.variants import RUN_METHOD
from xurs_pipeline.evaluation.swap.agreement import AGREEMENT_PASS, AGREEMENT_PASS_LOWER

SCOPE = "one data seed (pool seeds with `xurs swap-sweep`)"


def cell_name(name: str) -> str:
    """``A_order2`` -> ``model A, cue 2 first``."""
    role, order = name.split("_order")
    return f"model {role}, cue {order} first"


def _cells(by: Mapping[str, Any], yardsticks: list[str]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(yardstick, cell, its counts) of every (model, order) cell of the given yardsticks."""
    return [(y, name, c) for y in yardsticks for name, c in by[y]["cells"].items() if "_order" in name]


def _shown(cells: list[tuple[str, str, Mapping[str, Any]]]) -> str:
    return "; ".join(
        f"{y}, {cell_name(name)}: {c['clear_k']}/{c['clear_n']}"
        + (f" (Wilson low {c['clear_low']:.2f})" if c["clear_n"] else "")
        + (" passes" if c["passes"] else " fails")
        for y, name, c in cells
    )


def faithfulness_verdict(faithfulness: Mapping[str, Any], method: str) -> tuple[str, str, str]:
    """(answer, css class, evidence) from a swap summary's ``faithfulness`` section (module docstring);
    ``method``: what the run's attributions are (``attribution.method``), named in the evidence."""
    mine = faithfulness.get("methods", {}).get(RUN_METHOD) if faithfulness else None
    what = f"{method}'s agreement with what each model does (clear probes), {SCOPE}"
    if mine is None:
        return "n/a", "none", f"no faithfulness study of {method} in the swap summary (`dvc repro swap`)"
    valid = list(mine.get("validated_yardsticks", []))
    if not valid:
        why = "; ".join(f"{y}: planted {v['planted']}, models learned {v['models_learned']}, names the "
                        f"training cue on {v['rule_agreement']:.2f}"
                        for y, v in faithfulness.get("yardsticks", {}).items())  # fmt: skip
        return "n/a", "none", f"{what}: no yardstick is validated, so none may judge it ({why})"
    cells = _cells(mine, valid)
    failing = [c for c in cells if not c[2]["passes"]]
    marks = f"a cell passes at >= {AGREEMENT_PASS:g} with Wilson low >= {AGREEMENT_PASS_LOWER:g}"
    evidence = f"{what}, on the validated yardstick(s) {', '.join(valid)} ({marks}): {_shown(cells)}"
    if mine.get("trustworthy"):
        return "yes", "pass", f"{evidence}; every planted mechanism recovered"
    if failing:
        return "no", "fail", f"{evidence}; {len(failing)} of {len(cells)} cells fail"
    missed = [k for k, ok in mine.get("planted", {}).items() if not ok]
    why = (
        f"it misses the planted mechanism(s) {', '.join(missed)}"
        if missed
        else "the planted models cannot run this method, so nothing checks it without an intervention"
    )
    return "not shown", "fail", f"{evidence}; every cell passes, but trustworthy also needs {why}"
