"""Each attribution method scored against what each swap model does (``behaviour.py``) and against the
rule it was trained on (``measures.py``'s swap accuracy), on the same probes.

Per (method, role, probe), from the method's reading (``readings.py``) with its cue measures
(``measures.with_cue_measures``):

- ``learned_first``: the method ranks first the cue the role's labels followed (A: cue 1, B: cue 2);
- ``agrees``: the method ranks first the cue the model *depends on* (its larger behavioural effect); probes
  where the two edits move the width equally (``depends_on`` 0) have no behavioural answer and are left out;
- ``clear``: the behavioural margin is at least ``clear_margin``.

Per method: the training-rule swap accuracy and the behavioural agreement as shares with Wilson intervals
(``measures.wilson``), overall, per model and on the clear probes; Spearman's rank correlation between the
method's cue-1 share and the behavioural cue-1 share over all (model, probe) pairs; the median model
evaluations per probe. These are descriptions; the verdict is the analysis plan's alone
(``faithfulness.py``, docs/swap-plan.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from xurs_pipeline.evaluation.swap.measures import wilson


def scored(measured: pd.DataFrame, behaviour: pd.DataFrame, clear_margin: float) -> pd.DataFrame:
    """``measured`` (readings with their cue measures: method, role, record_id, top, share_1, learned_first,
    evals) joined with ``behaviour`` (role, record_id, depends_on, share_1, margin) -> adds agrees (NaN
    where the behaviour ties), clear, behaviour_share_1."""
    keep = behaviour[["role", "record_id", "depends_on", "share_1", "margin"]].rename(
        columns={"share_1": "behaviour_share_1"}
    )
    out = measured.merge(keep, on=["role", "record_id"], how="left", validate="many_to_one")
    if out["depends_on"].isna().any():
        missing = sorted(set(out.loc[out["depends_on"].isna(), "record_id"]))
        raise ValueError(f"no behavioural measure for probes {missing[:5]}")
    decided = out["depends_on"] > 0
    out["agrees"] = np.where(decided, out["top"] == out["depends_on"], np.nan)
    out["clear"] = decided & (out["margin"] >= clear_margin)
    return out


def proportion(k: int, n: int, prefix: str, confidence: float = 0.95) -> dict[str, float | int]:
    """``k`` of ``n`` as ``<prefix>``, ``_low``, ``_high`` (Wilson interval, ``measures.wilson``), ``_k``,
    ``_n``; NaN for none."""
    if n == 0:
        return {
            prefix: float("nan"),
            f"{prefix}_low": float("nan"),
            f"{prefix}_high": float("nan"),
            f"{prefix}_k": 0,
            f"{prefix}_n": 0,
        }
    p = wilson([True] * k + [False] * (n - k), confidence)
    return {
        prefix: p.value,
        f"{prefix}_low": p.low,
        f"{prefix}_high": p.high,
        f"{prefix}_k": k,
        f"{prefix}_n": n,
    }


def _share(values: pd.Series, prefix: str, confidence: float) -> dict[str, float | int]:
    values = values.dropna().astype(bool)
    return proportion(int(values.sum()), len(values), prefix, confidence)


def method_summary(part: pd.DataFrame, confidence: float = 0.95) -> dict[str, float | int | bool]:
    """One method's rows of :func:`scored` -> its measures (module docstring)."""
    out: dict[str, float | int | bool] = {}
    out.update(_share(part["learned_first"], "swap", confidence))
    out.update(_share(part["agrees"], "agreement", confidence))
    out.update(_share(part.loc[part["clear"], "agrees"], "agreement_clear", confidence))
    for role in sorted(set(part["role"])):
        mine = part[part["role"] == role]
        out.update(_share(mine["learned_first"], f"swap_{role}", confidence))
        out.update(_share(mine["agrees"], f"agreement_{role}", confidence))
    pairs = part[["share_1", "behaviour_share_1"]].dropna()
    constant = len(pairs) < 3 or pairs.nunique().min() < 2
    out["spearman"] = float("nan") if constant else float(stats.spearmanr(pairs).statistic)
    for cost in ("evals", "forwards", "grad_evals"):  # per probe: all evaluations, forwards, gradients
        out[f"{cost}_median"] = float(part[cost].median())
    return out


def comparison(scores: pd.DataFrame, confidence: float = 0.95) -> dict[str, dict[str, float | int | bool]]:
    """method -> :func:`method_summary`, in the order methods first appear."""
    return {
        str(m): method_summary(scores[scores["method"] == m], confidence)
        for m in dict.fromkeys(scores["method"])
    }
