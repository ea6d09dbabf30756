"""The clue study beside its nulls on a planted case where every answer is known: which positions are live,
what the input-only ranking and random scores give, and the card's verdict (a null that matches the
trained model must make it say the localisation does not show what the model learned)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xurs_pipeline.evaluation.clue_nulls import (
    clue_nulls,
    input_only_frame,
    live_by_question,
    prepared_references,
    records_frame,
)
from xurs_pipeline.evaluation.comparisons import RunRecord
from xurs_pipeline.reporting.clue_card import NullRow, clue_verdict, render_clue_card
from xurs_pipeline.reporting.tables import clue_nulls_frame

PAD = 0
# question q1: 10 tokens; case text = positions 2..8; the clue = 4, 5, 6
Q1 = [1, 2, 30, 31, 40, 41, 42, 32, 33, 3]
# two training prompts sharing the template (1, 2, ..., 3) and case tokens 30, 31 and 33, not the clue
R1 = [1, 2, 30, 31, 50, 51, 52, 53, 33, 3]
R2 = [1, 2, 30, 31, 54, 55, 56, 57, 33, 3]


def _prompts() -> pd.DataFrame:
    sections = ["special", "question"] + ["case"] * 7 + ["special"]
    rows = [
        {
            "record_id": "q1",
            "input_ids": Q1,
            "clue_positions": [4, 5, 6],
            "case_positions": list(range(2, 9)),
            "sections": sections,
            "split": "test",
        },
        {
            "record_id": "r1",
            "input_ids": R1,
            "clue_positions": [],
            "case_positions": [],
            "sections": sections,
            "split": "train",
        },
        {
            "record_id": "r2",
            "input_ids": R2,
            "clue_positions": [],
            "case_positions": [],
            "sections": sections,
            "split": "train",
        },
    ]
    return pd.DataFrame(rows)


def _frame(magnitude: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "record_id": "q1",
                "target": 2,
                "reference": "train",
                "reference_record_ids": ["r1", "r2"],
                "prepared_input_ids": [],
                "token_magnitude": magnitude,
            }
        ]
    )


def test_live_positions_input_only_ranking_and_base_rate_on_a_planted_question():
    prompts = _prompts()
    trained = _frame([0, 0, 0, 0, 5.0, 4.0, 3.0, 1.0, 0, 0])
    refs = prepared_references(trained, prompts, "position", PAD)
    np.testing.assert_array_equal(refs["q1"], [R1, R2])
    live = live_by_question(prompts, refs)
    assert live["q1"] == (4, 5, 6, 7)  # only the clue and position 7 differ from a reference
    aligned = prepared_references(trained, prompts, "sequence", PAD)  # shared text in place, as prepared
    assert live_by_question(prompts, aligned)["q1"] == (4, 5, 6, 7)
    stored = trained.assign(reference="aligned", prepared_input_ids=[R1])  # an aligned pair: as stored
    np.testing.assert_array_equal(prepared_references(stored, prompts, "position", PAD)["q1"], [R1])
    rng = np.random.default_rng(0)
    embedding = rng.normal(size=(60, 8))
    embedding[[40, 41, 42]] *= 10  # clue tokens far from everything: the input-only ranking finds them
    only = input_only_frame(trained, prompts, refs, embedding)
    scores = np.asarray(only["token_magnitude"].iloc[0])
    expected = [sum(np.linalg.norm(embedding[Q1[p]] - embedding[r[p]]) for r in (R1, R2)) for p in range(10)]
    np.testing.assert_allclose(scores, expected)
    # the randomised head puts position 7 first: its localisation is worse
    head = records_frame(
        [RunRecord("q1", 2, "train", np.array([0, 0, 0, 0, 1, 1, 1, 9.0, 0, 0]), np.zeros(10), 0.5)]
    )
    table, summary = clue_nulls(
        {"trained": trained, "randomised_head": head, "input_only": only},
        prompts,
        live,
        200,
        0.95,
        "percentile",
        0,
    )
    assert set(table["ranking"]) == {"trained", "randomised_head", "input_only"}
    case = {name: m["case_text"] for name, m in summary.items()}
    assert case["trained"]["best_rank_1_share"] == 1.0
    assert case["randomised_head"]["best_rank_1_share"] == 0.0
    assert case["input_only"]["best_rank_1_share"] == 1.0
    assert case["trained"]["base_rate_rank_1"] == pytest.approx(3 / 4)  # 3 live clue of 4 live positions
    assert case["trained"]["mean_clue_share_pct"] == pytest.approx(100 * 12 / 13)
    assert case["trained"]["median_live_positions"] == 4
    assert np.isnan(case["trained"]["mean_difference_pp"])  # 1 clue-free live position: no 3-wide window


def _rows(
    trained: tuple[float, float], head: tuple[float, float], only: tuple[float, float]
) -> tuple[NullRow, ...]:
    return tuple(
        NullRow(name, "case_text", 8, first, share, 0.57, 15, 8.5)
        for name, (first, share) in (("trained", trained), ("randomised_head", head), ("input_only", only))
    )


def test_the_verdict_fails_when_a_null_finds_the_clue_as_often():
    """A randomised head that finds the clue as often as the trained model does is not beaten; nor is an
    input-only ranking that matches it, or a base rate the trained model does not exceed."""
    today = clue_verdict(_rows((1.0, 81.0), (1.0, 81.1), (0.875, 62.0)), "case_text")
    assert not today.beats_nulls
    assert len(today.reasons) == 1
    assert "does not depend on the model" in today.reasons[0]
    construction = clue_verdict(_rows((0.75, 60.0), (0.25, 30.0), (0.875, 62.0)), "case_text")
    assert not construction.beats_nulls
    assert "by construction" in construction.reasons[0]
    chance = clue_verdict(_rows((0.5, 60.0), (0.25, 30.0), (0.25, 20.0)), "case_text")
    assert not chance.beats_nulls
    assert "random scores" in chance.reasons[0]
    no_head = tuple(r for r in _rows((1.0, 80.0), (0, 0), (0.5, 50.0)) if r.ranking != "randomised_head")
    untested = clue_verdict(no_head, "case_text")
    assert not untested.beats_nulls
    assert "untested" in untested.reasons[0]
    passed = clue_verdict(_rows((1.0, 80.0), (0.5, 40.0), (0.5, 50.0)), "case_text")
    assert passed.beats_nulls
    assert passed.reasons == ()


def test_the_card_and_the_table_show_all_three_rankings_and_say_it_plainly():
    nulls = {
        name: {
            "case_text": {
                "questions": 8,
                "best_rank_1_share": first,
                "mean_clue_share_pct": share,
                "base_rate_rank_1": 0.568,
                "median_live_positions": 15.0,
                "median_live_clue_positions": 8.5,
            }
        }
        for name, first, share in (
            ("trained", 1.0, 80.5),
            ("randomised_head", 1.0, 81.1),
            ("input_only", 0.875, 61.9),
        )
    }
    html = str(render_clue_card((), nulls))
    for fact in ("head re-initialised", "input only", "56.8%", "87.5%", "does not beat", "does not depend"):
        assert fact in html, fact
    assert 'class="fail"' in html
    assert 'class="pass"' not in html
    frame = clue_nulls_frame(nulls)
    assert list(frame["ranking"]) == ["trained", "randomised head", "input only"]
    assert str(render_clue_card((), {})) == ""
