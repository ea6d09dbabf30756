"""The swap control's measures (evaluation/swap/measures.py) on planted attributions where the answer is
known, and where it must fail; each planted ranking read as the study reads every method (``readings.py``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from xurs_pipeline.evaluation.swap.measures import swap_summary, with_cue_measures
from xurs_pipeline.evaluation.swap.readings import token_reading

CUES = [[3, 4], [7, 8, 9]]  # cue 1 and cue 2 token positions in a 12-token prompt


def _magnitudes(make, n: int = 16, ranking: str = "trained") -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(0)
    rows = [
        {"ranking": ranking, "role": role, "record_id": f"q{i}", "token_magnitude": make(role, rng)}
        for i in range(n)
        for role in ("A", "B")
    ]
    return pd.DataFrame(rows), {f"q{i}": CUES for i in range(n)}


def score_frame(magnitudes: pd.DataFrame, cues: dict) -> pd.DataFrame:
    """Token magnitudes (ranking, role, record_id, token_magnitude) read and measured as the study does."""
    rows = []
    for row in magnitudes.itertuples(index=False):
        reading = token_reading(row.token_magnitude, cues[row.record_id])
        rows.append(
            {
                "ranking": row.ranking,
                "role": row.role,
                "record_id": row.record_id,
                "top": reading.top,
                "share_1": reading.share_1,
            }
        )
    return with_cue_measures(pd.DataFrame(rows))


def cue_score(magnitude: np.ndarray, cues: list, learned: int):
    """One probe's measures under the role that learned cue ``learned`` (0 or 1)."""
    row = {"ranking": "r", "role": "AB"[learned], "record_id": "q", "token_magnitude": magnitude}
    frame = pd.DataFrame([row])
    return next(score_frame(frame, {"q": cues}).itertuples())


def _planted(role: str, rng: np.random.Generator) -> np.ndarray:
    """The learned cue carries the attribution (plus noise everywhere)."""
    a = rng.uniform(0, 0.1, 12)
    a[CUES[0] if role == "A" else CUES[1]] += 1.0
    return a


def test_cue_score_reads_the_learned_cue() -> None:
    a = np.zeros(12)
    a[4], a[8] = 2.0, 1.0  # cue 1 best 2, cue 2 best 1; shares 2/3 and 1/3
    s = cue_score(a, CUES, learned=0)
    assert s.learned_first
    assert s.learned_share == pytest.approx(2 / 3)
    assert s.cue1_share == pytest.approx(2 / 3)
    s = cue_score(a, CUES, learned=1)
    assert not s.learned_first
    assert s.learned_share == pytest.approx(1 / 3)
    assert s.cue1_share == pytest.approx(2 / 3)
    tie = cue_score(np.zeros(12), CUES, learned=0)  # a model that moves neither cue fails, share undefined
    assert not tie.learned_first
    assert math.isnan(tie.learned_share)
    with pytest.raises(ValueError, match="share positions"):
        cue_score(a, [[3, 4], [4, 5]], learned=0)
    with pytest.raises(ValueError, match="within the 12 tokens"):
        cue_score(a, [[3, 40], [7]], learned=0)


def test_a_planted_attribution_ranks_the_learned_cue_first() -> None:
    frame, cues = _magnitudes(_planted)
    summary = swap_summary(score_frame(frame, cues), "trained", resamples=2000)
    assert summary["swap_accuracy"] == 1.0
    assert summary["n"] == 32
    assert summary["swap_ci_low"] > 0.85  # Wilson lower bound of 32 of 32
    assert summary["share_ci_low"] > 0.8
    assert summary["share_difference"] > 0.9


def test_a_model_independent_ranking_scores_one_half() -> None:
    """Identical magnitudes under both models (what the input-only ranking gives): pooled accuracy
    exactly 1/2 and no share difference, whatever the magnitudes."""

    def same(role: str, rng: np.random.Generator) -> np.ndarray:
        return _planted("A", np.random.default_rng(int(rng.integers(1 << 30))))  # cue 1 loud, for both

    rows = []
    rng = np.random.default_rng(3)
    for i in range(16):
        a = rng.uniform(0, 1, 12)
        rows += [
            {"ranking": "input_only", "role": r, "record_id": f"q{i}", "token_magnitude": a} for r in "AB"
        ]
    summary = swap_summary(score_frame(pd.DataFrame(rows), {f"q{i}": CUES for i in range(16)}), "input_only")
    assert summary["swap_accuracy"] == 0.5
    assert summary["share_difference"] == 0.0
    frame, cues = _magnitudes(same)
    summary = swap_summary(score_frame(frame, cues), "trained", resamples=2000)
    assert summary["swap_accuracy"] == 0.5
    assert summary["swap_accuracy_A"] == 1.0
    assert summary["swap_accuracy_B"] == 0.0
    assert summary["share_ci_low"] <= 0.0 <= summary["share_ci_high"]


def test_a_randomised_run_sits_at_chance() -> None:
    """Magnitudes that ignore the cues (a re-initialised head's, at chance): the swap accuracy's interval
    holds 1/2."""
    frame, cues = _magnitudes(lambda role, rng: rng.uniform(0, 1, 12), ranking="randomised")
    summary = swap_summary(score_frame(frame, cues), "randomised", resamples=2000)
    assert summary["swap_ci_low"] <= 0.5 <= summary["swap_ci_high"]
