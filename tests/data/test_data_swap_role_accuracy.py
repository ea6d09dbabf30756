"""Each swap role's accuracy by which cue resolves the question (``evaluation/swap/inputs.py``), read on
planted predictions whose answers are known: a model that reads cue 2 scores 1 where cue 2 resolves the
question and follows cue 2 under role A's reading, so the measure tells the two readings apart."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xurs_pipeline.credal import FOCAL_INDEX, FOCAL_SETS
from xurs_pipeline.data.dataset import prepare_and_validate
from xurs_pipeline.data.synthetic import generate_swap
from xurs_pipeline.evaluation.swap.inputs import role_accuracy, role_test_records


@pytest.fixture(scope="module")
def prompts(tiny_tokenizer):
    return prepare_and_validate(generate_swap((150, 6, 8), 4, seed=5), tiny_tokenizer, 512).frame


def _reads_cue(rows, cue: int) -> torch.Tensor:
    """Masses (n, 15) of a model that puts all its mass on the condition ``cue`` names."""
    masses = torch.zeros(len(rows), len(FOCAL_SETS), dtype=torch.float64)
    for i, answers in enumerate(rows["cue_answers"]):
        masses[i, FOCAL_INDEX[(int(answers[cue - 1]),)]] = 1.0
    return masses


def test_role_records_are_the_test_records_with_a_result(prompts) -> None:
    rows = role_test_records(prompts, 2)
    assert len(rows)
    assert (rows["split"] == "test").all()
    assert rows["has_result"].astype(bool).all()
    assert not (rows["variant"] == "probe").any()  # probes carry no result: never scored
    assert list(rows["answer_idx"]) == [int(a[1]) for a in rows["cue_answers"]]  # relabelled by cue 2
    expected = prompts[(prompts["split"] == "test") & prompts["has_result"].astype(bool)]
    assert list(rows["record_id"]) == list(expected["record_id"])


def test_a_model_that_reads_cue_2_passes_as_b_and_follows_the_other_cue_as_a(prompts) -> None:
    rows = role_test_records(prompts, 2)
    as_b = role_accuracy(_reads_cue(rows, 2), rows, cue=2)
    assert as_b["accuracy_own_cue"] == 1.0
    assert as_b["follows_other"] == 0.0
    rows_a = role_test_records(prompts, 1)
    as_a = role_accuracy(_reads_cue(rows_a, 2), rows_a, cue=1)
    assert as_a["follows_other"] == 1.0  # it names cue 2's condition wherever that lies outside cue 1's pair
    assert as_a["accuracy_own_cue"] < 0.6  # cue 2 is independent of cue 1's label (chance 1/4)
    assert as_a["n_own_cue"] + as_a["n_other_cue_only"] <= len(rows_a)
    assert not np.isnan(as_a["accuracy_other_cue_only"])


def test_model_c_is_read_where_the_cues_agree_and_any_one_cue_reader_is_right_there(prompts) -> None:
    """Model C (cue 0: its labels follow both cues, on the texts where they agree) is read on the test
    records whose two cues name one label: a model that reads either cue is right on every one of them,
    and one that names another option is right on none; no record is counted as resolved by the other cue."""
    rows = role_test_records(prompts, 0)
    assert len(rows) and all(int(a[0]) == int(a[1]) for a in rows["cue_answers"])
    expected = role_test_records(prompts, 1)
    expected = expected[[int(a[0]) == int(a[1]) for a in expected["cue_answers"]]]
    assert list(rows["record_id"]) == list(expected["record_id"])
    for cue in (1, 2):
        c = role_accuracy(_reads_cue(rows, cue), rows, cue=0)
        assert (c["accuracy_own_cue"], c["n_own_cue"], c["n_other_cue_only"]) == (1.0, len(rows), 0)
    wrong = torch.zeros(len(rows), len(FOCAL_SETS), dtype=torch.float64)
    for i, answers in enumerate(rows["cue_answers"]):
        wrong[i, FOCAL_INDEX[((int(answers[0]) + 1) % 4,)]] = 1.0
    assert role_accuracy(wrong, rows, cue=0)["accuracy_own_cue"] == 0.0


def test_no_record_to_read_gives_no_accuracy_rather_than_an_error(prompts) -> None:
    """A tiny study can hold no test record whose cues agree: model C's accuracy is then NaN on 0."""
    rows = role_test_records(prompts, 0).iloc[:0]
    empty = role_accuracy(torch.zeros(0, len(FOCAL_SETS), dtype=torch.float64), rows, cue=0)
    assert np.isnan(empty["accuracy_own_cue"]) and empty["n_own_cue"] == 0
