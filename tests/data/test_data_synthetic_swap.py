"""The two-cue data of the swap control: cues independent of the label where they should be (a test that
fails on data where they are not), probes shared by both roles, spans, relabelling and preparation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

from xurs_pipeline.data.dataset import prepare_and_validate
from xurs_pipeline.data.records import DataError
from xurs_pipeline.data.synthetic import generate_swap, read_swap
from xurs_pipeline.data.synthetic.swap import hashed_cues, keep_agreeing, relabel_by_cue, relabel_mixed


@pytest.fixture(scope="module")
def records():
    return generate_swap((150, 6, 8), 4, seed=3)


def _independence_p(a: list[int], b: list[int]) -> float:
    table = np.zeros((int(max(a)) + 1, int(max(b)) + 1))
    np.add.at(table, (a, b), 1)
    return float(chi2_contingency(table).pvalue)


def test_the_other_cue_is_independent_of_each_roles_label(records) -> None:
    """In training, cue 2's label and resolved flag are independent of set A's label (cue 1's) and vice
    versa; the same chi-square test rejects data whose cue 2 follows the label."""
    train = [r.synthetic for r in records if r.split == "train"]
    first = [s.cue_answers[0] for s in train]
    second = [s.cue_answers[1] for s in train]
    assert _independence_p(first, second) > 0.001
    assert _independence_p(first, [int(s.cue_resolved[1]) for s in train]) > 0.001
    assert _independence_p(second, [int(s.cue_resolved[0]) for s in train]) > 0.001
    leaky = [a if k % 4 else b for k, (a, b) in enumerate(zip(first, second, strict=True))]  # 3 of 4 copy
    assert _independence_p(first, leaky) < 1e-6


def test_each_cue_names_its_roles_label_and_spans_cover_the_names(records) -> None:
    for record in records:
        info = record.synthetic
        named = read_swap(record)
        for k in range(2):
            assert info.cue_answers[k] in named[k]
            assert record.question[slice(*info.cue_spans[k])] == " or ".join(
                record.options[i] for i in named[k]
            )
        assert record.answer_idx == info.cue_answers[0]
        assert info.target_masses == info.cue_masses[0]
        assert info.has_result == any(info.cue_resolved)


def test_probes_are_the_unresolved_test_records_and_share_their_label(records) -> None:
    test = [r for r in records if r.split == "test"]
    probes = [r for r in test if not r.synthetic.has_result]
    assert {r.synthetic.variant for r in probes} == {"probe"}
    assert len(probes) == 8  # one per test family
    for probe in probes:
        a, b = read_swap(probe)
        assert probe.synthetic.cue_answers[0] == probe.synthetic.cue_answers[1] == probe.answer_idx
        assert len(a) == len(b) == 2
        assert set(a) != set(b)  # the cues name different pairs: the text tells them apart


def test_a_cue_that_does_not_name_its_label_is_rejected(records, tiny_tokenizer) -> None:
    record = next(
        r for r in records if all(r.synthetic.cue_resolved) and len(set(r.synthetic.cue_answers)) == 2
    )
    label = record.options[record.synthetic.cue_answers[1]]
    wrong = record.options[(record.synthetic.cue_answers[1] + 1) % 4]
    text = record.question.replace(f"positive for {label}.", f"positive for {wrong}.")
    tampered = replace(record, question=text)
    with pytest.raises(ValueError, match="cue 2 names"):
        read_swap(tampered)
    with pytest.raises(DataError, match=f"record '{record.record_id}'"):
        prepare_and_validate([tampered], tiny_tokenizer, 512)


def test_prepared_cues_and_relabelling_by_cue_2(records, tiny_tokenizer) -> None:
    frame = prepare_and_validate(records, tiny_tokenizer, 512).frame
    for cues in frame["cue_positions"]:
        assert len(cues[0])
        assert len(cues[1])
        assert not set(cues[0]) & set(cues[1])
    b = relabel_by_cue(frame, 2)
    assert b["input_ids"].map(tuple).equals(frame["input_ids"].map(tuple))  # the same texts and tokens
    assert (b["answer_idx"] == [c[1] for c in frame["cue_answers"]]).all()
    moved = (b["answer_idx"] != frame["answer_idx"]).mean()
    assert 0.6 < moved < 0.9  # independent labels differ on ~3/4 of the records
    with pytest.raises(DataError, match=r"relabelling by cue needs data\.source=synthetic_swap"):
        relabel_by_cue(frame.drop(columns=["cue_answers"]), 2)


def _follows(frame: pd.DataFrame, cues: list[int]) -> bool:
    """Does every row's label, masses and clue positions belong to the cue ``cues`` names for it?"""
    rows = zip(cues, frame.itertuples(), strict=True)
    return all(
        r.answer_idx == r.cue_answers[c - 1]
        and list(r.target_masses) == list(r.cue_masses[c - 1])
        and list(r.clue_positions) == list(r.cue_positions[c - 1])
        for c, r in rows
    )


def test_mixed_labels_follow_a_hashed_cue_per_text(records, tiny_tokenizer) -> None:
    """``relabel_mixed`` labels each text by the cue its id's hash draws: the same id the same cue in any
    frame, about the share asked for, and neither set A's nor set B's labels (which the check tells apart)."""
    frame = prepare_and_validate(records, tiny_tokenizer, 512).frame
    cues = hashed_cues(frame["record_id"], 0.5)
    mixed = relabel_mixed(frame, 0.5)
    assert _follows(mixed, cues)
    assert not _follows(relabel_by_cue(frame, 1), cues)
    assert not _follows(relabel_by_cue(frame, 2), cues)
    assert 0.4 < cues.count(1) / len(cues) < 0.6
    assert 0.6 < hashed_cues(frame["record_id"], 0.7).count(1) / len(cues) < 0.8
    assert hashed_cues(frame["record_id"][::-1], 0.5) == cues[::-1]  # a text's cue is its own
    assert _follows(relabel_mixed(frame, 1.0), [1] * len(frame))
    assert _follows(relabel_mixed(frame, 0.0), [2] * len(frame))
    with pytest.raises(DataError, match=r"share_cue1=1\.5"):
        relabel_mixed(frame, 1.5)
    with pytest.raises(DataError, match="cues 1 and 2"):
        relabel_by_cue(frame, 3)


def test_agreeing_texts_are_the_training_texts_whose_cues_name_one_label(records, tiny_tokenizer) -> None:
    """``keep_agreeing`` keeps exactly the training and dev texts whose two cues name the same label (counted
    here from the records) and every test record; its labels are both cues'."""
    frame = prepare_and_validate(records, tiny_tokenizer, 512).frame
    kept = keep_agreeing(frame)
    agreeing = {
        r.record_id
        for r in records
        if r.split != "test" and r.synthetic.cue_answers[0] == r.synthetic.cue_answers[1]
    }
    assert set(kept.loc[kept["split"] != "test", "record_id"]) == agreeing
    assert 0.15 < len(agreeing) / (frame["split"] != "test").sum() < 0.35  # independent labels: about 1/4
    assert (kept["split"] == "test").sum() == (frame["split"] == "test").sum()
    training = kept[kept["split"] != "test"]
    assert all(r.answer_idx == r.cue_answers[0] == r.cue_answers[1] for r in training.itertuples())
    assert _follows(kept, hashed_cues(kept["record_id"], 0.5))  # the masses' cue drawn per text
    assert not _follows(kept, [1] * len(kept))
    with pytest.raises(DataError, match="relabelling by cue needs"):
        keep_agreeing(frame.drop(columns=["cue_masses"]))


def test_no_agreeing_dev_text_is_refused_naming_the_key(records, tiny_tokenizer) -> None:
    """Model C needs a training and a dev text whose cues agree; without one, the error names
    ``data.families`` and which of its numbers to raise, before anything trains."""
    frame = prepare_and_validate(records, tiny_tokenizer, 512).frame
    disagree = [int(a[0]) != int(a[1]) for a in frame["cue_answers"]]
    no_dev = frame[(frame["split"] != "dev").to_numpy() | disagree]
    with pytest.raises(DataError, match=r"no dev text .* raise data\.families' second number"):
        keep_agreeing(no_dev)
    no_train = frame[(frame["split"] != "train").to_numpy() | disagree]
    with pytest.raises(DataError, match=r"no train text .* raise data\.families' first number"):
        keep_agreeing(no_train)


def test_the_input_only_ranking_is_the_same_under_both_models(records, tiny_tokenizer) -> None:
    """Model A's and model B's inputs differ only in labels, so the input-only ranking of the probes against
    the sequence-aligned references is identical, and its swap study sits exactly at 1/2 with no share
    difference; other references (hash-ordered) give another ranking, so the comparison can fail."""
    from xurs_pipeline.attribution.config import AttributionConfig
    from xurs_pipeline.evaluation.swap.inputs import input_only_magnitudes, prepared_references
    from xurs_pipeline.evaluation.swap.measures import swap_summary, with_cue_measures
    from xurs_pipeline.evaluation.swap.readings import token_reading

    frame = prepare_and_validate(records, tiny_tokenizer, 512).frame
    probes = frame.loc[frame["variant"] == "probe", "record_id"].tolist()
    embedding = np.random.default_rng(0).normal(size=(len(tiny_tokenizer), 16))
    at = AttributionConfig(method="kronrod", reference_alignment="sequence", refs_per_collection=2)
    pad = tiny_tokenizer.pad_token_id

    def ranking_of(prompts: pd.DataFrame, cfg: AttributionConfig) -> dict[str, np.ndarray]:
        return input_only_magnitudes(prompts, prepared_references(prompts, probes, cfg, pad), embedding)

    ranking = {cue: ranking_of(relabel_by_cue(frame, cue), at) for cue in (1, 2)}
    assert all(np.array_equal(ranking[1][p], ranking[2][p]) for p in probes)
    cues = dict(zip(frame["record_id"], frame["cue_positions"], strict=True))
    readings = [
        (role, p, token_reading(ranking[cue][p], cues[p]))
        for role, cue in (("A", 1), ("B", 2))
        for p in probes
    ]
    rows = [
        {"ranking": "input_only", "role": role, "record_id": p, "top": r.top, "share_1": r.share_1}
        for role, p, r in readings
    ]
    study = swap_summary(with_cue_measures(pd.DataFrame(rows)), "input_only", resamples=1000)
    assert study["swap_accuracy"] == 0.5
    assert study["share_difference"] == 0.0
    other = ranking_of(frame, replace(at, reference_order="hash"))
    assert not all(np.array_equal(ranking[1][p], other[p]) for p in probes)


def test_cue2_first_changes_only_the_sentence_order(records, tiny_tokenizer) -> None:
    """The sentence-order control: the same draws, labels and roles, with the urine test (cue 2) stated
    first; the reader still finds cue 1 by its test, the spans follow the sentences, and the prepared cue
    positions swap places in the prompt."""
    flipped = generate_swap((150, 6, 8), 4, seed=3, cue2_first=True)
    assert [r.record_id for r in flipped] == [r.record_id for r in records]
    for before, after in zip(records, flipped, strict=True):
        assert after.synthetic.cue_answers == before.synthetic.cue_answers
        assert after.synthetic.cue_resolved == before.synthetic.cue_resolved
        assert after.answer_idx == before.answer_idx
        assert read_swap(after) == read_swap(before)
        assert after.question.index("urine test") < after.question.index("blood test")
        assert after.synthetic.cue_spans[1][1] < after.synthetic.cue_spans[0][0]
        for k in range(2):
            assert (
                after.question[slice(*after.synthetic.cue_spans[k])]
                == before.question[slice(*before.synthetic.cue_spans[k])]
            )
    frame = prepare_and_validate(flipped, tiny_tokenizer, 512).frame
    assert all(max(cues[1]) < min(cues[0]) for cues in frame["cue_positions"])


def test_a_question_without_both_tests_is_rejected(records) -> None:
    record = records[0]
    tampered = replace(record, question=record.question.replace("urine test", "blood test"))
    with pytest.raises(ValueError, match="needs one blood and one urine test"):
        read_swap(tampered)


def test_cue2_first_needs_the_two_cue_data() -> None:
    from xurs_pipeline.data.config import DataConfig

    assert DataConfig(source="synthetic_swap", cue2_first=True).cue2_first
    with pytest.raises(ValueError, match=r"data\.cue2_first=true: only data\.source=synthetic_swap"):
        DataConfig(source="synthetic_direct", cue2_first=True)
