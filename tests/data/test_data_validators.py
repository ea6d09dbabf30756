"""App. D.2 validators: the rule-based reader, the paired-tokenisation check and the shortcut diagnostics."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse
import torch

from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import prepare_and_validate, prepare_dataset
from xurs_pipeline.data.records import DataError
from xurs_pipeline.data.synthetic import (
    ReaderRejection,
    check,
    check_all,
    check_pairs,
    generate_v1,
    generate_v2,
    prescribed_masses,
    read,
    shortcut_diagnostics,
)
from xurs_pipeline.data.synthetic.shortcuts import L2_PENALTY, fit_conditional_logit


@pytest.fixture(scope="module")
def v1():
    return generate_v1((4, 2, 2), 2, seed=1)


@pytest.fixture(scope="module")
def v2():
    return generate_v2((2, 1, 1), 1, seed=1)


def with_info(record, **change):
    return replace(record, synthetic=replace(record.synthetic, **change))


def other_plausible(record) -> int:
    reading = check(record, favour_label=False)
    return next(i for i in reading.plausible if i != record.answer_idx)


def broken_records(v1, v2) -> dict[str, tuple[object, str]]:
    resolved = next(r for r in v2 if r.synthetic.has_result)
    unresolved_v1 = next(r for r in v1 if not r.synthetic.has_result)
    masses = tuple(np.roll(resolved.synthetic.target_masses, 1).tolist())
    rules, case = resolved.question.split("\nCase: ")
    no_symptom = rules + "\nCase: " + case.replace(read(resolved).symptom, "no complaints")
    name = resolved.options[0]
    return {
        "has_result flipped": (with_info(resolved, has_result=False), "has_result=False"),
        "label not the singled-out option": (
            replace(resolved, answer_idx=other_plausible(resolved)),
            "label",
        ),
        "targets swapped": (with_info(resolved, target_masses=masses), "target_masses"),
        "clue span off the result": (with_info(resolved, clue_span=(0, 6)), "clue span"),
        "detail mismatch": (
            with_info(resolved, detail="evening" if "morning" in resolved.question else "morning"),
            "detail",
        ),
        "rule garbled": (
            replace(resolved, question=resolved.question.replace(" both cause ", " may cause ", 1)),
            "cannot parse",
        ),
        "option renamed": (replace(resolved, options=("Nobody disease", *resolved.options[1:])), f"{name!r}"),
        "symptom missing": (replace(resolved, question=no_symptom), "symptom"),
        "V1 unresolved with equal targets": (
            with_info(unresolved_v1, target_masses=check_targets_equal(unresolved_v1)),
            "target_masses",
        ),
    }


def check_targets_equal(record):
    reading = read(record)
    return prescribed_masses(reading.plausible, None, record.answer_idx, favour_label=False)


def test_reader_accepts_every_generated_record(v1, v2):
    assert check_all(v1, favour_label=True).rejections == ()
    assert check_all(v2, favour_label=False).rejections == ()
    assert len(check_all(v1, favour_label=False).rejections) == sum(not r.synthetic.has_result for r in v1)


@pytest.mark.parametrize(
    "case",
    [
        "has_result flipped",
        "label not the singled-out option",
        "targets swapped",
        "clue span off the result",
        "detail mismatch",
        "rule garbled",
        "option renamed",
        "symptom missing",
        "V1 unresolved with equal targets",
    ],
)
def test_reader_rejects_a_broken_record(case, v1, v2):
    record, why = broken_records(v1, v2)[case]
    favour = record.source == "synthetic_v1"
    with pytest.raises(ReaderRejection, match=why):
        check(record, favour_label=favour)
    report = check_all([record], favour_label=favour)
    assert [rid for rid, _ in report.rejections] == [record.record_id]


def test_reader_rejection_stops_prepare_naming_the_record(v1, tiny_tokenizer, tmp_path, monkeypatch):
    broken = [with_info(v1[0], has_result=not v1[0].synthetic.has_result), *v1[1:]]
    with pytest.raises(DataError, match=f"record '{v1[0].record_id}'"):
        prepare_and_validate(broken, tiny_tokenizer, 512, favour_label=True)
    monkeypatch.setattr("xurs_pipeline.data.dataset.generate_v1", lambda *a, **k: broken)
    out = tmp_path / "prepared"
    with pytest.raises(DataError, match="rule-based reader rejected 1 of"):
        prepare_dataset(DataConfig(source="synthetic_v1"), tiny_tokenizer, out)
    assert not out.exists()


def test_pairs_line_up_in_v2_and_not_in_v1(v1, v2, tiny_tokenizer):
    v2_pairs = check_pairs(prepare_and_validate(v2, tiny_tokenizer, 512).frame)
    assert v2_pairs.n_pairs == len(v2) // 2
    assert v2_pairs.n_identical_outside_clue == v2_pairs.n_pairs
    v1_pairs = check_pairs(prepare_and_validate(v1, tiny_tokenizer, 512, favour_label=True).frame)
    assert (v1_pairs.n_pairs, v1_pairs.n_same_length) == (len(v1) // 2, 0)  # V1 adds a sentence
    with pytest.raises(DataError, match=r"result pairs do not tokenise alike.*lengths differ"):
        prepare_and_validate(v1, tiny_tokenizer, 512, favour_label=True, require_paired_lengths=True)


def test_pair_check_flags_a_changed_token_and_a_missing_partner(v2, tiny_tokenizer):
    frame = prepare_and_validate(v2, tiny_tokenizer, 512).frame.copy()
    row = frame.index[frame["has_result"]][0]
    ids = list(frame.at[row, "input_ids"])
    ids[3] = ids[3] + 1  # a question token far from the clue
    frame.at[row, "input_ids"] = ids
    report = check_pairs(frame)
    assert report.failures[0] == (frame.at[row, "pair_id"], "tokens differ outside the clue at positions [3]")
    lonely = check_pairs(frame.drop(index=row))
    assert any("expected one record with and one without" in why for _, why in lonely.failures)


def test_shortcut_diagnostics_expose_v1_and_not_v2():
    v1 = generate_v1((20, 5, 5), 4, seed=2)
    v1_report = shortcut_diagnostics(v1, check_all(v1, favour_label=True).readings)
    assert v1_report["test_order"] == {"train": 1.0, "dev": 1.0, "test": 1.0}
    v2 = generate_v2((20, 10, 10), 2, seed=0)
    v2_report = shortcut_diagnostics(v2, check_all(v2, favour_label=False).readings)
    for predictor in ("test_order", "hidden_results_text"):  # chance within the plausible pair is 0.5
        accuracies = list(v2_report[predictor].values())
        assert max(accuracies) < 0.8, predictor
        assert 0.35 < np.mean(accuracies) < 0.65, predictor


def test_shortcut_predictors_use_training_labels_only(v1):
    readings = check_all(v1, favour_label=True).readings
    base = shortcut_diagnostics(v1, readings)
    relabelled = [replace(r, answer_idx=(r.answer_idx + 1) % 4) if r.split != "train" else r for r in v1]
    changed = shortcut_diagnostics(relabelled, readings)
    for predictor in ("test_order", "hidden_results_text", "majority"):
        assert changed[predictor]["train"] == base[predictor]["train"]
    assert changed["test_order"]["dev"] == 0.0  # same predictions, now all wrong


def test_conditional_logit_reaches_a_stationary_point_by_autograd():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(4 * 30, 5))
    labels = rng.integers(0, 4, size=30)
    w = fit_conditional_logit(scipy.sparse.csr_matrix(dense), labels)
    wt = torch.tensor(w, requires_grad=True)
    scores = (torch.tensor(dense) @ wt).reshape(30, 4)
    loss = torch.nn.functional.cross_entropy(scores, torch.tensor(labels)) + 0.5 * L2_PENALTY * wt @ wt
    loss.backward()
    assert wt.grad.abs().max().item() < 1e-4
