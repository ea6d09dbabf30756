"""Agreement metrics and section shares against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from xurs_pipeline.evaluation.agreement import (
    completeness_residual,
    cosine,
    max_abs_difference,
    relative_distance,
    spearman,
    top_k,
    topk_overlap,
)
from xurs_pipeline.evaluation.sections import SHARE_SECTIONS, compare_sections, section_shares, top_option


def test_spearman_hand_case_and_scipy():
    # one adjacent swap among 4: rho = 1 - 6 * (1 + 1) / (4 * 15) = 0.8
    assert spearman(np.array([1, 2, 3, 4.0]), np.array([1, 3, 2, 4.0])) == pytest.approx(0.8)
    assert spearman(np.array([1, 2, 3.0]), np.array([3, 2, 1.0])) == pytest.approx(-1.0)
    x, y = np.random.default_rng(0).normal(size=(2, 30))
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert math.isnan(spearman(np.ones(4), np.arange(4.0)))


def test_topk_and_overlap_hand_case():
    a = np.array([0.9, 0.1, 0.8, 0.7, 0.0])
    b = np.array([0.9, 0.8, 0.1, 0.7, 0.0])
    assert top_k(a, 3).tolist() == [0, 2, 3]
    assert topk_overlap(a, b, 3) == pytest.approx(2 / 3)  # {0, 2, 3} vs {0, 1, 3}
    assert topk_overlap(a, b, 1) == 1.0
    assert topk_overlap(a, b, 20) == 1.0  # k capped at the 5 positions
    assert top_k(np.array([1.0, 1.0, 0.5]), 1).tolist() == [0]  # ties go to the lower position
    with pytest.raises(ValueError, match="k >= 1"):
        top_k(a, 0)


def test_cosine_and_relative_distance_hand_case():
    e, e_ref = np.array([[1.0, 0.0]]), np.array([[1.0, 1.0]])
    assert cosine(e, e_ref) == pytest.approx(1 / math.sqrt(2))
    assert relative_distance(e, e_ref) == pytest.approx(1 / math.sqrt(2))  # |(0,-1)| / |(1,1)|
    assert relative_distance(e_ref, e) == pytest.approx(1.0)  # relative to the second vector
    assert cosine(np.array([2.0, -4.0]), np.array([1.0, -2.0])) == pytest.approx(1.0)  # scale-free
    with pytest.raises(ValueError, match="all-zero"):
        cosine(np.zeros(2), e_ref[0])
    with pytest.raises(ValueError, match="shapes"):
        relative_distance(np.ones(3), np.ones(2))


def test_completeness_residual_paper_table3_first_case():
    # Table 3 / Sec. 6.4: signed IG sum +0.002651 against Delta_aligned = +0.002640 -> R ~ 1.1e-5
    w_with = 0.31
    r = completeness_residual(0.002651, w_with, np.array([w_with - 0.002640]))
    assert r == pytest.approx(1.1e-5, abs=1e-9)
    # Eq. 9 averages the reference widths: |0.2 - (0.5 - mean(0.1, 0.3))| = 0.1
    assert completeness_residual(0.2, 0.5, np.array([0.1, 0.3])) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="at least one"):
        completeness_residual(0.1, 0.5, np.array([]))


def test_max_abs_difference():
    assert max_abs_difference(np.array([0.1, 0.5]), np.array([0.1, 0.2])) == pytest.approx(0.3)


def test_section_shares_and_comparison_hand_case():
    sections = [
        "special",
        "template",
        "question",
        "question",
        "option_A",
        "option_B",
        "option_C",
        "option_D",
        "answer_prefix",
    ]
    # the template token's magnitude 1 is in no text section: the denominator is the sections' 9, not 10
    mag = np.array([0.0, 1.0, 2.0, 2.0, 1.0, 3.0, 0.5, 0.5, 0.0])
    shares = section_shares(mag, sections)
    np.testing.assert_allclose(shares, np.array([4.0, 1.0, 3.0, 0.5, 0.5, 0.0]) / 9)
    assert shares.sum() == pytest.approx(1.0)
    louder_template = mag.copy()
    louder_template[1] = 50.0
    np.testing.assert_allclose(section_shares(louder_template, sections), shares)
    assert SHARE_SECTIONS[0] == "question"
    assert top_option(shares) == 1
    other = np.array([0.4, 0.3, 0.1, 0.05, 0.05, 0.1])
    cmp = compare_sections(shares, other)
    assert cmp["top_option_agree"] == 0.0
    assert cmp["share_difference"] == pytest.approx(np.abs(shares - other).mean())
    assert cmp["section_spearman"] == pytest.approx(stats.spearmanr(shares, other).statistic)
    with pytest.raises(ValueError, match=r"'r9'.*section labels"):
        section_shares(mag[:-1], sections, record_id="r9")
    with pytest.raises(ValueError, match="positive total"):
        section_shares(np.zeros(9), sections)
    with pytest.raises(ValueError, match=r"text sections.*positive total"):
        section_shares(np.eye(9)[1], sections)  # magnitude on the template only
