"""Null rankings of clue localisation: the input-only ranking against a brute-force loop, live positions,
and the base rate against an exact count over every ordering and a simulation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from xurs_pipeline.evaluation.localisation import identical_positions
from xurs_pipeline.evaluation.nulls import base_rate, chance_rank_1, input_only_scores, live_positions


def _brute_scores(x, refs, table):
    out = []
    for pos, tok in enumerate(x):
        total = 0.0
        for ref in refs:
            diff = [a - b for a, b in zip(table[tok], table[ref[pos]], strict=True)]
            total += sum(d * d for d in diff) ** 0.5
        out.append(total)
    return np.array(out)


def test_input_only_scores_match_a_brute_force_loop():
    rng = np.random.default_rng(3)
    table = rng.normal(size=(30, 7))
    x = rng.integers(0, 30, size=12)
    refs = rng.integers(0, 30, size=(4, 12))
    refs[:, 2] = x[2]  # a position every reference shares
    got = input_only_scores(x, refs, table)
    assert got.shape == (12,)
    np.testing.assert_allclose(got, _brute_scores(x, refs, table), rtol=1e-12)
    assert got[2] == 0.0


def test_input_only_scores_zero_baseline_is_the_embedding_norm():
    table = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(input_only_scores([0, 1, 2], None, table), [5.0, 0.0, 1.0])
    assert live_positions([0, 1, 2], None, table) == (0, 2)
    assert live_positions([0, 1, 2], None) == (0, 1, 2)


def test_input_only_ranking_finds_a_planted_clue_that_no_reference_shares():
    """Planted: the references share every token but the clue's (positions 4, 5), so the input-only
    ranking puts the clue first without any model, and only the clue is live."""
    rng = np.random.default_rng(0)
    table = rng.normal(size=(20, 5))
    x = np.array([1, 2, 3, 4, 10, 11, 5, 6])
    refs = np.tile(x, (3, 1))
    refs[:, 4:6] = [[12, 13], [14, 15], [16, 17]]
    scores = input_only_scores(x, refs, table)
    assert set(np.argsort(-scores)[:2]) == {4, 5}
    assert live_positions(x, refs) == (4, 5)


def test_live_positions_agree_with_identical_positions_on_embeddings():
    rng = np.random.default_rng(1)
    table = rng.normal(size=(15, 4))
    x = rng.integers(0, 15, size=10)
    refs = rng.integers(0, 15, size=(3, 10))
    refs[:, [0, 7]] = x[[0, 7]]
    live = live_positions(x, refs)
    dead = identical_positions(table[x], table[refs])
    assert sorted(set(live) | set(dead)) == list(range(10))
    assert set(live).isdisjoint(dead)
    assert live == live_positions(x, refs, table)


def test_tied_embedding_rows_are_dead_only_with_the_embedding():
    table = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # ids 0 and 1 share a row
    assert live_positions([0, 2], np.array([[1, 2]])) == (0,)
    assert live_positions([0, 2], np.array([[1, 2]]), table) == ()


def _exact_rank_1(region, clue, live):
    """Exact: every ordering of the live region positions is equally likely (dead ones rank last)."""
    live_region = [p for p in region if p in live]
    hits = sum(order[0] in clue for order in itertools.permutations(live_region))
    return hits / sum(1 for _ in itertools.permutations(live_region))


def test_chance_rank_1_equals_an_exact_count_over_orderings():
    region, clue, live = range(10), [3, 4, 5], [0, 3, 4, 6, 8, 9]  # clue 5 is dead
    assert chance_rank_1(region, clue, live) == pytest.approx(_exact_rank_1(region, clue, live))
    assert chance_rank_1(region, clue, live) == pytest.approx(2 / 6)


def test_base_rate_matches_a_simulation_of_random_scores():
    """The paper-like case: 13-16 live case-text positions, 7-9 of them clue (about 57%)."""
    rng = np.random.default_rng(7)
    questions = []
    for n_live, n_clue in [(13, 7), (14, 8), (16, 9), (15, 8)]:
        region = list(range(40))
        live = sorted(rng.choice(40, size=n_live, replace=False).tolist())
        clue = live[:n_clue] + [p for p in region if p not in live][:2]  # two dead clue tokens
        questions.append((region, clue, live))
    exact = base_rate(questions)
    assert exact == pytest.approx(np.mean([7 / 13, 8 / 14, 9 / 16, 8 / 15]))
    hits = []
    for _region, clue, live in questions:
        draws = rng.random((20000, len(live)))
        scores = np.zeros((20000, 40))
        scores[:, live] = draws + 1e-9
        hits.append(np.isin(scores.argmax(axis=1), clue).mean())
    assert np.mean(hits) == pytest.approx(exact, abs=0.01)


def test_base_rate_is_not_the_share_over_the_whole_region():
    """Must fail for a base rate that ignores liveness: 2 clue tokens of 20 would give 10%, not 50%."""
    region, clue, live = range(20), [5, 6], [5, 6, 7, 8]
    assert chance_rank_1(region, clue, live) == pytest.approx(0.5)
    assert chance_rank_1(region, clue, region) == pytest.approx(0.1)


def test_bad_shapes_and_clues_outside_the_region_are_refused():
    table = np.eye(4)
    with pytest.raises(ValueError, match="n_refs"):
        input_only_scores([0, 1], np.array([[0, 1, 2]]), table)
    with pytest.raises(ValueError, match="vocabulary"):
        input_only_scores([0, 9], np.array([[0, 1]]), table)
    with pytest.raises(ValueError, match="not in the region"):
        chance_rank_1([0, 1], [5], [0, 1])
    assert np.isnan(chance_rank_1([0, 1], [1], [5]))
    assert np.isnan(base_rate([]))
