"""Reference collections (Sec. 3.3, App. B.2): first N, or seeded SHA-256 ranking cut into K collections."""

from __future__ import annotations

import hashlib
import random

import pytest

from xurs_pipeline.data.references import PAPER_REFERENCE_SEED, hash_order, reference_collections

IDS = [f"medqa-train-{i:05d}" for i in range(1, 101)]


def test_first_order_takes_the_first_n_in_given_order():
    (collection,) = reference_collections(IDS, 10)
    assert collection == IDS[:10]


def test_hash_order_matches_an_independent_sha256_ranking():
    expected = sorted(IDS, key=lambda r: int(hashlib.sha256(f"20260804:{r}".encode()).hexdigest(), 16))
    assert hash_order(IDS, PAPER_REFERENCE_SEED) == expected
    assert PAPER_REFERENCE_SEED == 20260804


def test_hash_order_ignores_input_order_and_depends_on_seed():
    shuffled = list(IDS)
    random.Random(3).shuffle(shuffled)
    assert hash_order(shuffled) == hash_order(IDS)
    assert hash_order(IDS, seed=1) != hash_order(IDS, seed=2)
    assert sorted(hash_order(IDS)) == sorted(IDS)


def test_collections_are_consecutive_and_disjoint():
    collections = reference_collections(IDS, 30, n_collections=3, order="hash")
    ordered = hash_order(IDS)
    assert [len(c) for c in collections] == [30, 30, 30]
    assert [r for c in collections for r in c] == ordered[:90]
    assert len(set().union(*map(set, collections))) == 90
    assert collections == reference_collections(list(reversed(IDS)), 30, n_collections=3, order="hash")


def test_too_few_records_is_a_clear_error():
    with pytest.raises(ValueError, match=r"3 x 40 = 120 training prompts needed.*only 100"):
        reference_collections(IDS, 40, n_collections=3, order="hash")


def test_bad_order_and_duplicates_rejected():
    with pytest.raises(ValueError, match="must be one of"):
        reference_collections(IDS, 5, order="random")
    with pytest.raises(ValueError, match="duplicate record ids"):
        reference_collections([*IDS, IDS[0]], 5)
