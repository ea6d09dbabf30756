"""Counterbalanced cue order (data.swap_order, data/synthetic/swap.py): half of each split's texts and of
its probes state cue 2 first, the draws, labels and roles are those of the fixed order, and the prepared
cue positions say which order each question has (``cue_order``)."""

from __future__ import annotations

import pytest

from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import prepare_and_validate
from xurs_pipeline.data.synthetic.swap import cue_order, generate_swap, read_swap

FAMILIES = (40, 4, 12)


def urine_first(record) -> bool:
    return record.question.index("urine test") < record.question.index("blood test")


def test_counterbalanced_states_cue_2_first_in_half_of_each_split_and_of_the_probes() -> None:
    fixed = generate_swap(FAMILIES, 4, seed=3)
    balanced = generate_swap(FAMILIES, 4, seed=3, order="counterbalanced")
    assert [r.record_id for r in balanced] == [r.record_id for r in fixed]
    for split in ("train", "dev", "test"):
        mine = [r for r in balanced if r.split == split]
        assert sum(map(urine_first, mine)) == len(mine) // 2
    probes = [r for r in balanced if r.synthetic.variant == "probe"]
    assert sum(map(urine_first, probes)) == len(probes) // 2 == FAMILIES[2] // 2
    assert not any(map(urine_first, fixed))
    for before, after in zip(fixed, balanced, strict=True):  # only the sentence order changes
        assert (after.synthetic.cue_answers, after.synthetic.cue_resolved, after.answer_idx) == (
            before.synthetic.cue_answers,
            before.synthetic.cue_resolved,
            before.answer_idx,
        )
        assert read_swap(after) == read_swap(before)
        assert sorted(after.question) == sorted(before.question)


def test_every_family_holds_both_orders_in_training() -> None:
    balanced = generate_swap(FAMILIES, 4, seed=3, order="counterbalanced")
    by_family: dict[str, set[bool]] = {}
    for r in balanced:
        if r.split == "train":
            by_family.setdefault(r.synthetic.family, set()).add(urine_first(r))
    assert all(orders == {True, False} for orders in by_family.values())


def test_the_prepared_cue_positions_give_each_questions_order(tiny_tokenizer) -> None:
    balanced = generate_swap((8, 2, 6), 4, seed=4, order="counterbalanced")
    frame = prepare_and_validate(balanced, tiny_tokenizer, 512).frame
    found = [cue_order(c) for c in frame["cue_positions"]]
    assert found == [2 if urine_first(r) else 1 for r in balanced]
    assert set(found) == {1, 2}


def test_bad_orders_are_refused_by_key() -> None:
    assert DataConfig(source="synthetic_swap", swap_order="counterbalanced").swap_order == "counterbalanced"
    with pytest.raises(ValueError, match=r"data\.swap_order='sometimes': must be one of"):
        DataConfig(source="synthetic_swap", swap_order="sometimes")
    with pytest.raises(ValueError, match=r"only data\.source=synthetic_swap has two cues to order"):
        DataConfig(source="synthetic_direct", swap_order="counterbalanced")
    with pytest.raises(ValueError, match=r"data\.cue2_first=true with data\.swap_order=counterbalanced"):
        DataConfig(source="synthetic_swap", swap_order="counterbalanced", cue2_first=True)
    with pytest.raises(ValueError, match="order='x' must be one of"):
        generate_swap(FAMILIES, 4, order="x")
