"""Each method's description in the study's summary (``summary.json``'s ``methods``), read off the one ledger
(``faithfulness.scored``): its rows of the judging yardstick (``plan.JUDGE``) and the cells the verdict
computed from them (``faithfulness.cells``). Nothing here is computed a second time; these are
descriptions, and the verdict is the analysis plan's alone (docs/swap-plan.md).

Per method:

- ``agreement``, ``agreement_clear``, ``agreement_<role>``: the cells ``all`` (every decided probe), ``all``
  on its clear probes and each model's, with their clustered intervals (``<prefix>``, ``_low``, ``_high``,
  ``_k``, ``_n``, ``_deff``);
- ``swap``: the training-rule swap accuracy, how often the method ranks first the cue the role's labels
  followed (a share of every probe of the models whose labels name a cue, with its Wilson interval);
- ``spearman``: Spearman's rank correlation between the method's cue-1 share and the yardstick's over every
  (model, probe) pair; the median cost per probe (``readings.COSTS``).

Per model whose labels name a cue (:func:`behaves_as_trained`): on how many probes the judge names that cue.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from scipy import stats

from xurs_pipeline.evaluation.significance import proportion
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.faithfulness import one_method
from xurs_pipeline.evaluation.swap.readings import COSTS
from xurs_pipeline.evaluation.swap.roles import CUE_ROLES, ROLES, TRAINING_CUE


def renamed(cell: dict[str, Any], share: str, prefix: str) -> dict[str, Any]:
    """One share of a ledger cell (``agreement`` or ``clear``, with its suffixes) under ``prefix``."""
    return {prefix + key[len(share) :]: value for key, value in cell.items() if key.startswith(share)}


def description(rows: pd.DataFrame, cells: dict[str, Any], confidence: float) -> dict[str, Any]:
    """One method's ledger rows of ``plan.JUDGE`` and its cells there -> its description (module
    docstring)."""
    out = {
        **renamed(cells["all"], "agreement", "agreement"),
        **renamed(cells["all"], "clear", "agreement_clear"),
    }
    for role in (r for r in ROLES if r in cells):
        out.update(renamed(cells[role], "agreement", f"agreement_{role}"))
    named = rows[rows["role"].isin(CUE_ROLES)]
    as_trained = int((named["top"] == named["role"].map(TRAINING_CUE)).sum())
    out.update(proportion(as_trained, len(named), "swap", confidence))
    pairs = rows[["share_1", "share_1_yardstick"]].dropna()
    constant = len(pairs) < 3 or pairs.nunique().min() < 2
    out["spearman"] = float("nan") if constant else float(stats.spearmanr(pairs).statistic)
    out.update({f"{cost}_median": float(rows[cost].median()) for cost in COSTS})
    return out


def behaves_as_trained(rows: pd.DataFrame) -> dict[str, dict[str, float | int]]:
    """Per role: on how many probes the judge (``plan.JUDGE``) names the cue the model was trained on (k of
    n, share), from one method's rows of the ledger."""
    judge = one_method(rows)
    out = {}
    named = judge[(judge["yardstick"] == plan.JUDGE) & judge["role"].isin(CUE_ROLES)]
    for role, part in named.groupby("role", sort=True):
        k, n = int((part["depends_on"] == TRAINING_CUE[str(role)]).sum()), len(part)
        out[str(role)] = {"k": k, "n": n, "share": k / n if n else float("nan")}
    return out


def descriptions(rows: pd.DataFrame, result: dict[str, Any], confidence: float) -> dict[str, dict[str, Any]]:
    """The ledger and :func:`faithfulness.faithfulness`'s result -> method -> :func:`description`, in the
    ledger's method order."""
    judge = rows[rows["yardstick"] == plan.JUDGE]
    return {
        m: description(judge[judge["method"] == m], by[plan.JUDGE]["cells"], confidence)
        for m, by in result["methods"].items()
    }
