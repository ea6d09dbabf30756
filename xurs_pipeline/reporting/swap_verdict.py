"""The report's swap verdict, "Follows what each model learned?", answered by the analysis plan
(``evaluation/swap/plan.py``, docs/swap-plan.md) from the faithfulness study
(``evaluation/swap/faithfulness.py``): the run's method (the ``paper`` row, read from the attribute stages'
runs under ``attribution.method``) against what each model *does*, on the judging yardsticks, per model and
cue order.

"yes" where the plan's verdict is ``passes``, "no" where it is ``fails``, "n/a" where it is ``no verdict``
(one run is one data seed: the plan needs pooled seeds) or the summary has no faithfulness study. The
evidence lists the judging cells either way. The training rule's swap accuracy is shown beside it, labelled
as such: it measures agreement with the labels' rule, not with the model, so it is never the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xurs_pipeline.attribution.variants import RUN_METHOD
from xurs_pipeline.evaluation.swap import plan

ANSWERS = {"passes": ("yes", "pass"), "fails": ("no", "fail"), "no verdict": ("n/a", "none")}


def cell_name(name: str) -> str:
    """``A_order2`` -> ``model A, cue 2 first``."""
    role, order = name.split("_order")
    return f"model {role}, cue {order} first"


def _shown(by: Mapping[str, Any], judges: list[str]) -> str:
    """Every (model, order) cell of the judging yardsticks: clear k/n, its clustered low, marks met."""
    return "; ".join(
        f"{y}, {cell_name(name)}: {c['clear_k']}/{c['clear_n']}"
        + (f" (low {c['clear_low']:.2f})" if c["clear_n"] else "")
        + (" meets the marks" if c["meets_marks"] else " below the marks")
        for y in judges for name, c in by[y]["cells"].items() if "_order" in name
    )


def faithfulness_verdict(faithfulness: Mapping[str, Any], method: str) -> tuple[str, str, str]:
    """(answer, css class, evidence) from a swap summary's ``faithfulness`` section (module docstring);
    ``method``: what the run's attributions are (``attribution.method``), named in the evidence."""
    mine = faithfulness.get("methods", {}).get(RUN_METHOD) if faithfulness else None
    if mine is None:
        return "n/a", "none", f"no faithfulness study of {method} in the swap summary (`dvc repro swap`)"
    answer, css = ANSWERS[mine["verdict"]]
    judges = list(faithfulness.get("judges", []))
    marks = (f"a cell meets the marks at >= {plan.AGREEMENT_PASS:g} with its lower bound (clustered) >= "
             f"{plan.AGREEMENT_PASS_LOWER:g}")
    cells = f"; {_shown(mine, judges)}" if judges else "; no yardstick judges"
    reasons = f": {'; '.join(mine['reasons'])}" if mine["reasons"] else ""
    evidence = (f"{method}'s agreement with what each model does (clear probes), by the analysis plan "
                f"(docs/swap-plan.md), {mine['verdict']}{reasons} ({marks}){cells}")
    return answer, css, evidence
