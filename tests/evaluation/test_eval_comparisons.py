"""Run comparisons, leave-one-collection-out averages and the Table 6/7 verdicts."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from xurs_pipeline.evaluation.comparisons import (
    RunMismatchError,
    RunRecord,
    compare_runs,
    leave_one_out_runs,
    token_magnitude,
)
from xurs_pipeline.evaluation.config import NumericsThresholds, RankingThresholds
from xurs_pipeline.evaluation.verdicts import (
    Check,
    checks_frame,
    numerics_checks,
    ranking_checks,
    residual_checks,
)

SECTIONS = ("question", "question", "option_A", "option_B", "option_C", "option_D", "answer_prefix")


def record(
    rid: str, coords: np.ndarray, c: int = 0, reference: str = "train", width: float = 0.3
) -> RunRecord:
    return RunRecord(rid, c, reference, token_magnitude(coords), coords, width, SECTIONS)


def test_compare_runs_hand_case():
    a = np.array([[3.0, 4.0], [0, 1], [0, 0.5], [2, 0], [0, 0.1], [0, 0], [0.2, 0]])
    b = a.copy()
    b[0] = [4.0, 3.0]  # same magnitude 5, different direction
    frame = compare_runs([record("q1", a)], [record("q1", b, width=0.3 + 2e-7)], topks=(2, 20))
    row = frame.iloc[0]
    assert row["spearman"] == pytest.approx(1.0)
    assert row["overlap_top2"] == 1.0
    assert row["overlap_top20"] == 1.0
    norm = np.linalg.norm(b)
    assert row["cosine"] == pytest.approx(float((a * b).sum()) / norm**2)  # |a| = |b|
    assert row["relative_distance"] == pytest.approx(math.sqrt(2) / norm)  # |(−1, 1)| / |b|
    assert row["width_difference"] == pytest.approx(2e-7)
    assert row["section_spearman"] == pytest.approx(1.0)
    assert row["top_option_agree"] == 1.0
    assert row["share_difference"] == pytest.approx(0.0)


def test_runs_covering_different_questions_or_references_raise():
    x = np.ones((7, 2))
    with pytest.raises(RunMismatchError, match=r"different questions.*only in 'seed 17': \[\('q2', 0\)\]"):
        compare_runs([record("q1", x)], [record("q1", x), record("q2", x)], names=("seed 11", "seed 17"))
    with pytest.raises(RunMismatchError, match=r"reference 'train'.*'zero'"):
        compare_runs([record("q1", x)], [record("q1", x, reference="zero")])
    with pytest.raises(RunMismatchError, match="twice"):
        compare_runs([record("q1", x), record("q1", x)], [record("q1", x)])
    with pytest.raises(RunMismatchError, match="token counts"):
        compare_runs([record("q1", x)], [record("q1", np.ones((6, 2)))])
    with pytest.raises(RunMismatchError, match="empty"):
        compare_runs([], [])


def test_leave_one_out_averages_hand_case():
    cols = [np.full((7, 2), v) for v in (1.0, 2.0, 6.0)]
    full, loo = leave_one_out_runs([[record("q", c)] for c in cols])
    np.testing.assert_allclose(full[0].signed, 3.0)
    np.testing.assert_allclose(full[0].magnitude, 3.0 * math.sqrt(2))
    assert [float(r[0].signed[0, 0]) for r in loo] == [4.0, 3.5, 1.5]
    with pytest.raises(RunMismatchError):
        leave_one_out_runs([[record("q", cols[0])], [record("p", cols[1])]])
    with pytest.raises(ValueError, match=">= 2 collections"):
        leave_one_out_runs([[record("q", cols[0])]])


def test_numerics_checks_pass_and_fail_at_table7_thresholds():
    th = NumericsThresholds()
    good = pd.DataFrame(
        {
            "spearman": [0.99, 0.96, 0.97],
            "overlap_top20": [0.85, 0.9, 0.8],
            "cosine": [0.999, 0.995, 0.99],
            "relative_distance": [0.05, 0.1, 0.02],
        }
    )
    assert all(c.passed for c in numerics_checks(good, th, "eg"))
    bad = good.assign(relative_distance=[0.15, 0.2, 0.05])  # paper's EG: 0.1563 > 0.10
    verdicts = {c.name: c.passed for c in numerics_checks(bad, th, "eg")}
    assert verdicts == {
        "median_spearman": True,
        "median_overlap_top20": True,
        "median_cosine": True,
        "median_relative_distance": False,
    }
    r = residual_checks(np.array([0.0652, 0.01, 0.07, 0.08]), th, "eg")  # paper's median residual 0.0652
    assert [(c.name, c.passed) for c in r] == [("median_residual", False), ("max_residual", False)]
    ig = residual_checks(
        np.array([0.004, 0.001, 0.0245]), NumericsThresholds(residual_aggregate="mean"), "ig"
    )
    assert [(c.name, c.passed) for c in ig] == [("mean_residual", True), ("max_residual", True)]
    nan = numerics_checks(good.assign(spearman=[np.nan, 1.0, 1.0]), th, "eg")
    assert not nan[0].passed  # a NaN (constant ranking) fails
    with pytest.raises(KeyError, match="overlap_top20"):
        numerics_checks(good.drop(columns="overlap_top20"), th, "eg")


def test_ranking_checks_table6():
    th = RankingThresholds()
    frame = pd.DataFrame(
        {
            "section_spearman": [0.95, 0.9, 1.0],
            "top_option_agree": [1.0, 1.0, 0.0],
            "overlap_top20": [0.8, 0.75, 0.7],
            "share_difference": [0.01, 0.02, 0.03],
            "width_difference": [0.0, 1e-7, 5e-7],
        }
    )
    checks = ranking_checks(frame, th, "llama")
    values = {c.name: (c.value, c.passed) for c in checks}
    assert values["top_option_agreement"] == (pytest.approx(2 / 3), False)
    assert values["mean_overlap_top20"] == (pytest.approx(0.75), True)
    assert values["median_section_spearman"] == (pytest.approx(0.95), True)
    assert values["median_share_difference"] == (pytest.approx(0.02), True)
    assert values["max_width_difference"] == (pytest.approx(5e-7), True)
    out = checks_frame(checks)
    assert list(out.columns) == ["group", "name", "value", "threshold", "direction", "n", "passed"]
    assert out["passed"].tolist() == [True, False, True, True, True]
    assert Check("g", "x", 1e-5, 1e-6, "<=", 1).passed is False


def _spearman_closed_form(ranks_a: np.ndarray, ranks_b: np.ndarray) -> float:
    """1 - 6 sum d^2 / (n (n^2 - 1)) for two rankings without ties (independent of scipy)."""
    n = len(ranks_a)
    return 1 - 6 * float(((ranks_a - ranks_b) ** 2).sum()) / (n * (n * n - 1))


NINE = np.arange(1.0, 10.0)  # magnitudes of the nine positions alignment changed, in rank order


@pytest.mark.parametrize(
    "changed_b",
    [
        NINE[::-1],  # the order of the nine changed positions reversed: Spearman -1
        np.concatenate([NINE[:6][::-1], NINE[6:]]),  # top three kept, the other six reversed: 0.417
    ],
    ids=["nine_reversed", "top3_kept_rest_reversed"],
)
def test_aligned_reference_ranks_only_the_changed_positions(changed_b: np.ndarray):
    """App. B.4: for aligned paired references the ranking checks concern the positions alignment changed;
    every other position is exactly 0 in both runs and must not make the rankings look alike."""
    seq, changed = 40, tuple(range(12, 21))
    coords_a, coords_b = np.zeros((seq, 2)), np.zeros((seq, 2))
    coords_a[list(changed), 0], coords_b[list(changed), 0] = NINE, changed_b
    sections = ("question",) * seq
    run_a = [RunRecord("q", 0, "aligned", token_magnitude(coords_a), coords_a, 0.3, sections, changed)]
    run_b = [RunRecord("q", 0, "aligned", token_magnitude(coords_b), coords_b, 0.3, sections, changed)]
    row = compare_runs(run_b, run_a, topks=(3,)).iloc[0]
    assert row["spearman"] == pytest.approx(_spearman_closed_form(NINE, changed_b))
    assert row["spearman"] < 0.95
    checks = numerics_checks(compare_runs(run_b, run_a, topks=(3,)), NumericsThresholds(topk=3), "g")
    assert not next(c for c in checks if c.name == "median_spearman").passed
    # the same vectors ranked over all 40 positions (a non-aligned reference) look almost identical
    a, b = (dataclasses.replace(r[0], reference="train", changed_positions=()) for r in (run_a, run_b))
    assert compare_runs([b], [a]).iloc[0]["spearman"] > 0.95
