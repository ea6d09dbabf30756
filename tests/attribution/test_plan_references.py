"""Sampling plans, quadrature rules and reference preparation (Sec. 3.3, 5.4)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import integrate

from xurs_pipeline.attribution.plan import QUADRATURES, batches, collection_seed, eg_plan, quadrature
from xurs_pipeline.attribution.references import align_paired, pad_or_truncate, prepare_training

PAD = 0
CPU = torch.device("cpu")


def test_eg_plan_is_replayable_and_matches_numpy_draw_order() -> None:
    a, b = eg_plan(7, 50, seed=11), eg_plan(7, 50, seed=11)
    np.testing.assert_array_equal(a.ref_index, b.ref_index)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    np.random.seed(11)  # noqa: NPY002  the order Captum's GradientShap draws in: reference indices, then alphas
    np.testing.assert_array_equal(a.ref_index, np.random.choice(7, 50))  # noqa: NPY002
    np.testing.assert_array_equal(a.alpha, np.random.uniform(0.0, 1.0, 50))  # noqa: NPY002
    assert not np.array_equal(a.alpha, eg_plan(7, 50, seed=12).alpha)
    assert a.draws(7).sum() == 50
    assert np.isclose(a.weight.sum(), 1.0)


def test_collection_seeds_start_at_base_and_differ() -> None:
    seeds = [collection_seed(11, k) for k in range(3)]
    assert seeds[0] == 11
    assert len(set(seeds)) == 3
    assert seeds == [collection_seed(11, k) for k in range(3)]


@pytest.mark.parametrize("rule", QUADRATURES)
def test_quadrature_weights_sum_to_one_on_unit_interval(rule: str) -> None:
    nodes, weights = quadrature(rule, 9)
    assert np.isclose(weights.sum(), 1.0)
    assert nodes.min() >= 0.0
    assert nodes.max() <= 1.0


@pytest.mark.parametrize("n", [1, 3, 6])
def test_gauss_legendre_exact_to_degree_2n_minus_1(n: int) -> None:
    nodes, weights = quadrature("gausslegendre", n)
    for degree in range(2 * n):
        assert np.isclose(weights @ nodes**degree, 1.0 / (degree + 1), atol=1e-13)
    if n <= 3:  # and not beyond (the error for x^(2n) is visible at small n)
        assert not np.isclose(weights @ nodes ** (2 * n), 1.0 / (2 * n + 1), atol=1e-9)


def test_riemann_rules_agree_with_scipy_and_textbook_errors() -> None:
    f = np.exp
    nodes, weights = quadrature("riemann_trapezoid", 11)
    assert np.isclose(weights @ f(nodes), integrate.trapezoid(f(nodes), nodes), rtol=1e-14)
    h = 0.1  # trapezoid on x^2 overestimates by h^2/6, midpoint underestimates by h^2/12 (n = 10 cells)
    assert np.isclose(weights @ nodes**2 - 1 / 3, h**2 / 6)
    mid_nodes, mid_weights = quadrature("riemann_middle", 10)
    assert np.isclose(mid_weights @ mid_nodes**2 - 1 / 3, -(h**2) / 12)
    left, right = quadrature("riemann_left", 10), quadrature("riemann_right", 10)
    assert np.isclose(left[1] @ left[0], 0.45)
    assert np.isclose(right[1] @ right[0], 0.55)


def test_batches_cover_range_in_order() -> None:
    parts = list(batches(10, 4))
    assert [(p.start, p.stop) for p in parts] == [(0, 4), (4, 8), (8, 10)]


def test_pad_or_truncate_keeps_the_start() -> None:
    assert pad_or_truncate([1, 5, 6], 5, PAD) == [1, 5, 6, PAD, PAD]
    assert pad_or_truncate([1, 5, 6, 7, 8], 3, PAD) == [1, 5, 6]


def test_align_paired_puts_shared_text_at_original_positions() -> None:
    # the original has a two-token test result (9, 9) that the paired prompt lacks
    original = [1, 5, 6, 7, 9, 9, 8, 4]
    paired = [1, 5, 6, 7, 8, 4]
    aligned = align_paired(original, paired, PAD)
    assert aligned.prepared_ids == (1, 5, 6, 7, PAD, PAD, 8, 4)
    assert aligned.changed_positions == (4, 5)
    assert aligned.padded_positions == (4, 5)


def test_align_paired_replacement_fits_and_omits_extra_tokens() -> None:
    original = [1, 5, 30, 8, 4]
    paired = [1, 5, 31, 32, 33, 8, 4, 7]  # a longer replacement and a trailing extra token
    aligned = align_paired(original, paired, PAD)
    assert aligned.prepared_ids == (1, 5, 31, 8, 4)
    assert aligned.changed_positions == (2,)
    assert aligned.padded_positions == ()
    shorter = align_paired([1, 30, 31, 32, 4], [1, 40, 4], PAD)
    assert shorter.prepared_ids == (1, 40, PAD, PAD, 4)
    assert shorter.changed_positions == (1, 2, 3)


def test_training_prompts_aligned_by_sequence_keep_shared_text_in_place() -> None:
    """A training prompt whose case text is one token longer than the question's: by position (Sec. 3.3)
    every later token is shifted and differs, so the shared options and answer cue can take attribution;
    aligned by sequence only the case's own tokens differ (hand-worked)."""
    question = [1, 5, 30, 31, 8, 40, 41, 4]  # template, case (30, 31), '.', options (40, 41), cue
    train = [1, 5, 50, 51, 52, 8, 40, 41, 4]
    by_position = prepare_training(question, [train], ["t"], PAD, CPU)
    by_sequence = prepare_training(question, [train], ["t"], PAD, CPU, "sequence")
    assert by_position.prepared_ids.tolist() == [[1, 5, 50, 51, 52, 8, 40, 41]]
    assert by_position.changed_positions == [(2, 3, 4, 5, 6, 7)]
    assert by_sequence.prepared_ids.tolist() == [[1, 5, 50, 51, 8, 40, 41, 4]]
    assert by_sequence.changed_positions == [(2, 3)]
    assert by_sequence.natural_ids == [train]  # the natural prompt is kept for the reference-shift check
    with pytest.raises(ValueError, match="alignment='diff'"):
        prepare_training(question, [train], ["t"], PAD, CPU, "diff")
