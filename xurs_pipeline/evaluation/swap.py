"""The two-cue swap control's measures: does the attribution follow the cue the model learned?

Each probe (``data/synthetic/swap.py``) states two cues of the same form, both unresolved, and is explained
under model A (trained on labels that follow cue 1) and model B (cue 2), against the same references. Per
question and model, from the token magnitudes ``a`` (seq,) and the two cues' token positions:

- ``learned_first``: the learned cue's best token outranks every token of the other cue,
  ``max_{l in learned} a_l > max_{l in other} a_l`` (a tie fails: a model that moves neither cue fails);
- ``learned_share``: the learned cue's share of the two cues' magnitude,
  ``sum_{learned} a / (sum_{cue 1} a + sum_{cue 2} a)`` (NaN when both are zero);
- ``cue1_share``: cue 1's share, the same number read for cue 1 whatever was learned.

Over questions: the swap accuracy (share of ``learned_first``) with its Wilson interval
(``scipy.stats.binomtest``), and the between-model difference of cue 1's share, ``cue1_share(A) -
cue1_share(B)`` per question, with the question-level bootstrap interval of ``evaluation/bootstrap.py``.
A ranking that does not depend on the model (the input-only ranking of ``nulls.py``) gives the same
``cue1_share`` under both models, a difference of exactly 0, and a pooled swap accuracy of exactly 1/2 on
tie-free questions (one of the two cues outranks the other, and it is the learned one for one model only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from xurs_pipeline.evaluation.bootstrap import mean_advantage_interval

ROLES = ("A", "B")  # model A learned cue 1, model B cue 2
LEARNED_CUE = {"A": 0, "B": 1}  # index into the two cues
# The attribution runs of the study: name -> (model, head re-initialised).
SWAP_RUNS = {"A": ("A", False), "B": ("B", False), "A_random": ("A", True), "B_random": ("B", True)}


@dataclass(frozen=True)
class CueScore:
    learned_first: bool
    learned_share: float
    cue1_share: float


def cue_score(magnitude: Sequence[float], cues: Sequence[Sequence[int]], learned: int) -> CueScore:
    """Scores of one question under one model: magnitude (seq,), ``cues`` the two cues' token positions,
    ``learned`` (0 or 1) the index of the cue the model learned."""
    a = np.abs(np.asarray(magnitude, dtype=np.float64))
    if len(cues) != 2 or learned not in (0, 1):
        raise ValueError(f"two cues and learned in (0, 1) expected, got {len(cues)} cues, learned={learned}")
    for k, cue in enumerate(cues):
        if not len(cue) or min(cue) < 0 or max(cue) >= a.size:
            raise ValueError(
                f"cue {k + 1} positions {list(cue)} must be non-empty and within the {a.size} tokens"
            )
    if set(cues[0]) & set(cues[1]):
        raise ValueError(f"the cues share positions {sorted(set(cues[0]) & set(cues[1]))}")
    best = [float(a[list(c)].max()) for c in cues]
    total = [float(a[list(c)].sum()) for c in cues]
    both = total[0] + total[1]
    share1 = total[0] / both if both > 0 else float("nan")
    learned_share = share1 if learned == 0 else (1.0 - share1 if both > 0 else float("nan"))
    return CueScore(best[learned] > best[1 - learned], learned_share, share1)


@dataclass(frozen=True)
class Proportion:
    value: float
    low: float
    high: float
    k: int
    n: int


def wilson(successes: Sequence[bool], confidence: float = 0.95) -> Proportion:
    """Share of successes with its Wilson score interval (``scipy.stats.binomtest``)."""
    k, n = int(np.sum(successes)), len(successes)
    if n == 0:
        raise ValueError("no questions: a swap accuracy needs at least one")
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Proportion(k / n, float(ci.low), float(ci.high), k, n)


def score_frame(magnitudes: pd.DataFrame, cues: dict[str, list[list[int]]]) -> pd.DataFrame:
    """One row per (ranking, role, record_id): ``magnitudes`` has columns ranking (trained, randomised,
    input_only...), role (A/B), record_id and token_magnitude; ``cues`` maps record ids to the two cues'
    positions. Adds learned_first, learned_share and cue1_share."""
    rows = []
    for row in magnitudes.itertuples(index=False):
        score = cue_score(row.token_magnitude, cues[row.record_id], LEARNED_CUE[row.role])
        rows.append({"ranking": row.ranking, "role": row.role, "record_id": row.record_id, **score.__dict__})
    return pd.DataFrame(rows)


def swap_summary(
    scores: pd.DataFrame, ranking: str, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> dict[str, float | int]:
    """The swap study of one ranking: swap accuracy over both models' questions (and per model) with Wilson
    intervals, the mean learned share, and the mean between-model difference of cue 1's share over the
    questions explained under both models with its bootstrap interval."""
    part = scores[scores["ranking"] == ranking]
    if part.empty:
        raise ValueError(f"no scores for ranking {ranking!r}")
    pooled = wilson(part["learned_first"].tolist(), confidence)
    out: dict[str, float | int] = {
        "swap_accuracy": pooled.value, "swap_ci_low": pooled.low, "swap_ci_high": pooled.high,
        "n": pooled.n, "learned_share": float(part["learned_share"].mean()),
    }  # fmt: skip
    for role in ROLES:
        mine = part[part["role"] == role]
        if not mine.empty:
            p = wilson(mine["learned_first"].tolist(), confidence)
            out.update({f"swap_accuracy_{role}": p.value, f"swap_ci_low_{role}": p.low,
                        f"swap_ci_high_{role}": p.high, f"n_{role}": p.n})  # fmt: skip
    wide = part.pivot(index="record_id", columns="role", values="cue1_share").dropna()
    if set(ROLES) <= set(wide.columns) and len(wide):
        interval = mean_advantage_interval(
            wide["A"].to_numpy(), wide["B"].to_numpy(), resamples, confidence, seed=seed
        )
        out.update(share_difference=interval.mean, share_ci_low=interval.low, share_ci_high=interval.high,
                   n_paired=interval.n)  # fmt: skip
    return out


# The pass mark for the trained models (docs/swap-control.md): accuracy, its Wilson lower bound,
# and a between-model share difference whose interval lies above 0.
PASS_ACCURACY, PASS_LOWER = 0.9, 0.7


def passes(summary: dict[str, float | int]) -> bool:
    """Does a ranking pass the swap test: swap accuracy >= 0.9, Wilson lower bound >= 0.7 and the share
    difference's interval above 0."""
    return bool(
        summary["swap_accuracy"] >= PASS_ACCURACY
        and summary["swap_ci_low"] >= PASS_LOWER
        and summary.get("share_ci_low", float("-inf")) > 0
    )


SWAP_SOURCE = "synthetic_swap"


def skipped_reason(source: str) -> str | None:
    """Why the swap stages have nothing to do on ``data.source`` (None on the two-cue data)."""
    if source == SWAP_SOURCE:
        return None
    return f"data.source={source!r}: the swap control needs the two-cue data (experiment=controlled_swap)"
