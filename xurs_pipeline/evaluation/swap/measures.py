"""The swap control's measures of a ranking: does the attribution follow the cue the model learned?

Each probe (``data/synthetic/swap.py``) states two cues of the same form, both unresolved, and is explained
under model A (trained on labels that follow cue 1) and model B (cue 2), against the same references. Per
(run, probe), from the reading of the ranking (``readings.py``: each cue's best and total magnitude):

- ``learned_first``: the learned cue's best token outranks every token of the other cue,
  ``max_{l in learned} a_l > max_{l in other} a_l`` (a tie fails: a model that moves neither cue fails);
- ``learned_share``: the learned cue's share of the two cues' magnitude,
  ``sum_{learned} a / (sum_{cue 1} a + sum_{cue 2} a)`` (NaN when both are zero);
- ``cue1_share``: cue 1's share, the same number read for cue 1 whatever was learned.

Over questions: the swap accuracy (share of ``learned_first``) with its Wilson interval
(``evaluation/significance.py``), and the between-model difference of cue 1's share, ``cue1_share(A) -
cue1_share(B)`` per question, with the question-level bootstrap interval of ``evaluation/bootstrap.py``.
A ranking that does not depend on the model (the input-only ranking of ``nulls.py``) gives the same
``cue1_share`` under both models, a difference of exactly 0, and a pooled swap accuracy of exactly 1/2 on
tie-free questions (one of the two cues outranks the other, and it is the learned one for one model only).
The rankings of the study: ``trained`` and ``randomised`` (the ``paper`` method under the trained and the
randomised runs) and ``input_only``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.bootstrap import mean_advantage_interval
from xurs_pipeline.evaluation.significance import wilson
from xurs_pipeline.evaluation.swap.roles import CUE_ROLES, RUNS, TRAINING_CUE

RANKINGS = ("trained", "randomised", "input_only")


def with_cue_measures(readings: pd.DataFrame) -> pd.DataFrame:
    """``readings`` (``readings.COLUMNS``) with learned_first, learned_share and cue1_share (module
    docstring), computed once for every study that reads them; a model whose labels name no cue (C) has
    no learned share (NaN)."""
    cue = readings["role"].map(TRAINING_CUE)
    out = readings.copy()
    out["learned_first"] = out["top"] == cue
    out["learned_share"] = np.select([cue == 1, cue == 2], [out["share_1"], 1.0 - out["share_1"]], np.nan)
    out["cue1_share"] = out["share_1"]
    return out


def ranking_frame(measured: pd.DataFrame) -> pd.DataFrame:
    """The study's rankings (``per_question.parquet``): ranking, role, record_id, learned_first,
    learned_share, cue1_share; ``paper`` under each run of a model that learned a cue by its ranking, and
    ``input_only``."""
    measured = measured[measured["role"].isin(CUE_ROLES)]
    paper = measured[measured["method"] == "paper"]
    inputs = measured[measured["method"] == "input_only"]
    frame = pd.concat(
        [
            paper.assign(ranking=paper["run"].map(lambda r: RUNS[r].ranking)),
            inputs.assign(ranking="input_only"),
        ],
        ignore_index=True,
    )
    return frame[["ranking", "role", "record_id", "learned_first", "learned_share", "cue1_share"]]


def _swap_accuracy(learned_first: pd.Series, suffix: str, confidence: float) -> dict[str, float | int]:
    """The share of ``learned_first`` with its Wilson interval: ``swap_accuracy<suffix>``,
    ``swap_ci_low<suffix>``, ``swap_ci_high<suffix>``, ``n<suffix>``."""
    p = wilson(learned_first.tolist(), confidence)
    return {
        f"swap_accuracy{suffix}": p.value,
        f"swap_ci_low{suffix}": p.low,
        f"swap_ci_high{suffix}": p.high,
        f"n{suffix}": p.n,
    }


def _share_difference(
    part: pd.DataFrame, resamples: int, confidence: float, seed: int
) -> dict[str, float | int]:
    """The mean between-model difference (A - B) of cue 1's share over the questions explained under both
    models, with its bootstrap interval (none without such questions)."""
    wide = part.pivot(index="record_id", columns="role", values="cue1_share").dropna()
    if not set(CUE_ROLES) <= set(wide.columns) or not len(wide):
        return {}
    first, second = (wide[role].to_numpy() for role in CUE_ROLES)  # A learned cue 1, B cue 2
    interval = mean_advantage_interval(first, second, resamples, confidence, seed=seed)
    return {
        "share_difference": interval.mean,
        "share_ci_low": interval.low,
        "share_ci_high": interval.high,
        "n_paired": interval.n,
    }


def swap_summary(
    scores: pd.DataFrame, ranking: str, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> dict[str, float | int]:
    """The swap study of one ranking: swap accuracy over both models' questions (and per model) with Wilson
    intervals, the mean learned share, and the mean between-model difference of cue 1's share over the
    questions explained under both models with its bootstrap interval."""
    part = scores[scores["ranking"] == ranking]
    if part.empty:
        raise ValueError(f"no scores for ranking {ranking!r}")
    out = _swap_accuracy(part["learned_first"], "", confidence)
    out["learned_share"] = float(part["learned_share"].mean())
    for role in CUE_ROLES:
        mine = part[part["role"] == role]
        if len(mine):  # a model without questions has no accuracy
            out.update(_swap_accuracy(mine["learned_first"], f"_{role}", confidence))
    out.update(_share_difference(part, resamples, confidence, seed))
    return out
