"""The direct-clue controlled data (the positive control's data): sizes, partners, targets, unseen names,
its reader, and preparation."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import torch

from xurs_pipeline.credal import credal_width
from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import prepare_and_validate
from xurs_pipeline.data.records import DataError
from xurs_pipeline.data.synthetic import generate_direct, read_direct


@pytest.fixture(scope="module")
def records():
    return generate_direct((12, 3, 3), 4, seed=5, pair_every=4)


def test_every_case_has_the_result_and_every_kth_case_its_partner(records) -> None:
    resolved = [r for r in records if r.synthetic.has_result]
    partners = [r for r in records if not r.synthetic.has_result]
    assert len(resolved) == 18 * 4
    assert len(partners) == 18  # one per family (case index 0 of 4)
    assert {p.synthetic.pair_id for p in partners} <= {r.synthetic.pair_id for r in resolved}
    assert Counter(r.split for r in records) == {"train": 60, "dev": 15, "test": 15}


def test_the_result_names_the_label_and_the_partner_a_pair_holding_it(records) -> None:
    for record in records:
        named = read_direct(record)
        assert record.answer_idx in named
        assert len(named) == (1 if record.synthetic.has_result else 2)
        clue = record.question[slice(*record.synthetic.clue_span)]  # the named condition(s)
        assert clue == " or ".join(record.options[i] for i in named)
    partners = [r for r in records if not r.synthetic.has_result]
    first_named_is_label = sum(read_direct(r)[0] == r.answer_idx for r in partners)
    assert 0 < first_named_is_label < len(partners)  # the order of the pair does not give the label away


def test_targets_make_the_label_certain_with_the_result_and_uncertain_without(records) -> None:
    for record in records:
        width = credal_width(torch.tensor(record.synthetic.target_masses, dtype=torch.float64))
        expected = 0.1 if record.synthetic.has_result else 0.8
        assert float(width[record.answer_idx]) == pytest.approx(expected)


def test_dev_and_test_names_are_unseen_in_training_and_labels_spread(records) -> None:
    by_split = {s: {o for r in records if r.split == s for o in r.options} for s in ("train", "dev", "test")}
    assert not by_split["train"] & (by_split["dev"] | by_split["test"])
    assert set(Counter(r.answer_idx for r in records)) == {0, 1, 2, 3}


def test_reader_rejects_a_result_that_names_another_option(records, tiny_tokenizer) -> None:
    record = next(r for r in records if r.synthetic.has_result)
    wrong = record.options[(record.answer_idx + 1) % 4]
    named = record.options[record.answer_idx]
    tampered = replace(record, question=record.question.replace(f"for {named}.", f"for {wrong}."))
    with pytest.raises(ValueError, match="is not among the named options"):
        read_direct(tampered)
    with pytest.raises(DataError, match=f"record '{record.record_id}'"):
        prepare_and_validate([tampered], tiny_tokenizer, 512)


def test_prepared_direct_data_has_clue_positions_and_a_validator_summary(records, tiny_tokenizer) -> None:
    prepared = prepare_and_validate(records, tiny_tokenizer, 512)
    assert prepared.summary["validators"]["reader"] == {"n_checked": len(records), "n_rejected": 0}
    frame = prepared.frame
    assert (frame["clue_positions"].map(len) > 0).all()
    assert prepared.summary["validators"]["pairs"]["n_pairs"] == 18


def test_pair_every_only_applies_to_the_direct_data() -> None:
    with pytest.raises(ValueError, match=r"data\.pair_every=4: only data\.source=synthetic_direct"):
        DataConfig(source="synthetic_v1", pair_every=4)
    with pytest.raises(ValueError, match=r"data\.pair_every=0: must be >= 1"):
        DataConfig(source="synthetic_direct", pair_every=0)
