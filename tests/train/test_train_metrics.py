"""Predictions table, metrics and correction audit, checked against brute force and ``credal``."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from xurs_pipeline.credal import beliefs_to_masses, closed_form_width, correction_stats
from xurs_pipeline.models.heads import ClassifierOutput
from xurs_pipeline.train.metrics import auroc, correction_audit, prediction_metrics, with_result_flags
from xurs_pipeline.train.predict import PREDICTION_COLUMNS, prediction_frame


def brute_force_auroc(scores, positive) -> float:
    pairs = [
        (p, n) for p, n in itertools.product(range(len(scores)), repeat=2) if positive[p] and not positive[n]
    ]
    wins = sum(1.0 if scores[p] > scores[n] else 0.5 if scores[p] == scores[n] else 0.0 for p, n in pairs)
    return wins / len(pairs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=2, max_size=30))
def test_auroc_equals_brute_force_pair_count(rows) -> None:
    scores = np.array([r[0] for r in rows], dtype=float) / 4  # few distinct values: many ties
    positive = np.array([r[1] for r in rows])
    if positive.all() or not positive.any():
        assert auroc(scores, positive) is None
    else:
        assert auroc(scores, positive) == pytest.approx(brute_force_auroc(scores, positive), abs=1e-12)


def _belief_output(seed: int, n: int) -> ClassifierOutput:
    raw = torch.randn(n, 14, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 2
    return ClassifierOutput(raw, beliefs_to_masses(torch.sigmoid(raw)))


def test_prediction_frame_agrees_with_credal() -> None:
    out = _belief_output(0, 12)
    labels = [i % 4 for i in range(12)]
    frame = prediction_frame(out, "belief14", labels, [f"q{i}" for i in range(12)])
    assert list(frame.columns) == list(PREDICTION_COLUMNS)
    stats = correction_stats(torch.sigmoid(out.raw))
    stack = lambda col: np.stack(frame[col].to_numpy())  # noqa: E731
    np.testing.assert_allclose(stack("masses"), out.masses.numpy(), atol=1e-12)
    np.testing.assert_allclose(stack("intermediate"), stats.intermediate.numpy(), atol=1e-12)
    np.testing.assert_allclose(stack("width"), stack("pl") - stack("bel"), atol=1e-12)  # Eq. 2
    np.testing.assert_allclose(stack("width"), closed_form_width(torch.sigmoid(out.raw)).numpy(), atol=1e-12)
    np.testing.assert_allclose(stack("betp").sum(1), 1.0, atol=1e-12)
    assert (frame["predicted"] == stack("betp").argmax(1)).all()
    assert (frame["correct"] == (frame["predicted"] == frame["answer_idx"])).all()
    np.testing.assert_array_equal(frame["rescaled"], frame["s"] > 1 + 1e-6)
    np.testing.assert_allclose(frame["r"], np.maximum(1 - frame["s"], 0), atol=1e-12)


def test_metrics_and_audit_from_a_frame() -> None:
    frame = prediction_frame(_belief_output(1, 40), "belief14", [0] * 40, [f"q{i}" for i in range(40)])
    metrics = prediction_metrics(frame)
    correct = frame["correct"].to_numpy()
    chosen = np.arange(40), frame["predicted"].to_numpy()
    assert metrics["accuracy"] == pytest.approx(correct.mean())
    wrong = ~correct
    assert metrics["auroc_width"] == pytest.approx(brute_force_auroc(np.stack(frame["width"])[chosen], wrong))
    low_p = 1 - np.stack(frame["betp"])[chosen]
    assert metrics["auroc_low_probability"] == pytest.approx(brute_force_auroc(low_p, wrong))
    audit = correction_audit(frame, "cfg")
    assert audit["rescaling_pct"] == pytest.approx(100 * (frame["s"] > 1 + 1e-6).mean())
    assert audit["negative_share"] == pytest.approx((frame["n_negative"] > 0).mean())
    assert audit["mean_total_adjustment"] == pytest.approx(frame["total_adjustment"].mean())


def test_accuracy_comes_with_chance_majority_and_the_controlled_split() -> None:
    answers = [0] * 25 + [1] * 10 + [2] * 5  # majority answer A: 25 of 40
    ids = [f"q{i}" for i in range(40)]
    frame = prediction_frame(_belief_output(1, 40), "belief14", answers, ids)
    plain = prediction_metrics(frame)
    assert plain["chance"] == 0.25
    assert plain["majority"] == 25 / 40
    assert "accuracy_with_result" not in plain  # data without has_result (MedQA)
    prompts = pd.DataFrame({"record_id": ids[::-1], "has_result": [i % 3 == 0 for i in range(40)][::-1]})
    flagged = with_result_flags(frame, prompts)
    shown = np.array([i % 3 == 0 for i in range(40)])
    metrics = prediction_metrics(flagged)
    correct = frame["correct"].to_numpy(dtype=bool)
    assert metrics["accuracy_with_result"] == pytest.approx(correct[shown].mean())
    assert metrics["accuracy_without_result"] == pytest.approx(correct[~shown].mean())
    medqa = pd.DataFrame({"record_id": ids, "has_result": [None] * 40})
    assert "has_result" not in with_result_flags(frame, medqa).columns


def test_mass15_frame_has_no_correction() -> None:
    logits = torch.randn(5, 15, generator=torch.Generator().manual_seed(2))
    out = ClassifierOutput(logits, torch.softmax(logits, -1))
    frame = prediction_frame(out, "mass15", [1] * 5, list("abcde"))
    assert all(len(b) == 0 for b in frame["beliefs"])
    assert not frame["rescaled"].any()
    assert (frame["total_adjustment"] == 0).all()
    assert correction_audit(frame, "ctl") == {"configuration": "ctl", "n": 5, "correction_applies": False}


def test_frame_and_metrics_reject_mismatched_input() -> None:
    with pytest.raises(ValueError, match="3 outputs, 2 labels, 3 ids"):
        prediction_frame(_belief_output(0, 3), "belief14", [0, 1], ["a", "b", "c"])
    with pytest.raises(ValueError, match="differ in shape"):
        auroc(np.zeros(3), np.zeros(2, bool))
