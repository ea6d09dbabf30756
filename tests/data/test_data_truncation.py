"""Fitting prompts into max_tokens: only the question shrinks; options and 'Answer:' stay whole (Sec. 5.1)."""

from __future__ import annotations

import pytest

from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.prompt import format_prompt
from xurs_pipeline.data.records import DataError, QuestionRecord

OPTIONS = ("Gentamicin", "Ciprofloxacin", "Ceftriaxone", "Trimethoprim")


def record(question: str, record_id: str = "long") -> QuestionRecord:
    return QuestionRecord(record_id, "test", "medqa", question, OPTIONS, 2)


def test_long_question_is_cut_to_fit_and_flagged(tiny_tokenizer):
    question = " ".join(f"The patient reports symptom number {i}." for i in range(60))
    full = len(tiny_tokenizer(format_prompt(question, OPTIONS).text)["input_ids"])
    budget = full // 2
    prepared = prepare_records([record(question), record("Which drug?", "short")], tiny_tokenizer, budget)
    long_row, short_row = prepared.frame.iloc[0], prepared.frame.iloc[1]
    assert long_row.truncated
    assert not short_row.truncated
    assert len(long_row.input_ids) <= budget
    assert len(long_row.input_ids) >= budget - 3, "cut at a token boundary, not far below the budget"
    assert question.startswith(long_row.question)
    assert len(long_row.question) < len(question)
    assert long_row.prompt == format_prompt(long_row.question, OPTIONS).text
    assert long_row.prompt.endswith(
        "\nA. Gentamicin\nB. Ciprofloxacin\nC. Ceftriaxone\nD. Trimethoprim\nAnswer:"
    )
    sections = list(long_row.sections)
    for name in ("option_A", "option_B", "option_C", "option_D", "answer_prefix"):
        assert name in sections
    assert prepared.summary["n_truncated"] == 1
    assert prepared.summary["truncated_ids"] == ["long"]


def test_prompt_exactly_at_budget_is_untouched(tiny_tokenizer):
    text = format_prompt("Which drug?", OPTIONS).text
    n = len(tiny_tokenizer(text)["input_ids"])
    prepared = prepare_records([record("Which drug?")], tiny_tokenizer, n)
    assert not prepared.frame.iloc[0].truncated
    assert prepared.frame.iloc[0].question == "Which drug?"


def test_budget_below_options_and_prefix_names_the_record(tiny_tokenizer):
    with pytest.raises(DataError, match=r"record 'tight'.*data\.max_tokens=16"):
        prepare_records([record("Which drug is it?", "tight")], tiny_tokenizer, 16)
