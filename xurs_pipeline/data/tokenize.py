"""Tokenise prompts with offsets, fitting each into ``max_tokens`` by shortening only the question (Sec. 5.1).

Truncation keeps the beginning of the question and cuts its end at a token boundary (the character end
of the last question token kept, trailing whitespace removed), then re-tokenises and repeats until the
prompt fits; options, labels and the ``Answer:`` prefix are never touched. ``max_tokens`` counts every
token, special tokens included. A prompt whose options and prefix alone exceed it raises
:class:`DataError` naming the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from xurs_pipeline.data.prompt import FormattedPrompt, format_prompt
from xurs_pipeline.data.records import DataError, QuestionRecord
from xurs_pipeline.data.sections import SECTION_INDEX, CharClasses, TokenLabels, label_tokens

MAX_TRUNCATION_ROUNDS = 20


@dataclass(frozen=True)
class Encoded:
    input_ids: np.ndarray  # (n_tokens,) int64
    offsets: np.ndarray  # (n_tokens, 2) character spans into the prompt text
    special: np.ndarray  # (n_tokens,) bool


@dataclass(frozen=True)
class TokenizedPrompt:
    """A record as prompted (question possibly shortened), its tokens and their labels."""

    record: QuestionRecord
    prompt: FormattedPrompt
    chars: CharClasses
    encoded: Encoded
    labels: TokenLabels
    truncated: bool


def encode_batch(tokenizer: Any, texts: Sequence[str]) -> list[Encoded]:
    """Tokenise ``texts`` (special tokens added, no padding, no truncation) with offsets and special mask."""
    if not getattr(tokenizer, "is_fast", False):
        raise DataError(f"tokenizer {type(tokenizer).__name__} is not a fast tokenizer; offsets need one")
    batch = tokenizer(
        list(texts),
        add_special_tokens=True,
        truncation=False,
        padding=False,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_attention_mask=False,
    )
    out = []
    for ids, offsets, special in zip(
        batch["input_ids"], batch["offset_mapping"], batch["special_tokens_mask"], strict=True
    ):
        offs = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        is_special = np.asarray(special, dtype=bool)
        offs[is_special] = 0
        out.append(Encoded(np.asarray(ids, dtype=np.int64), offs, is_special))
    return out


def _formatted(record: QuestionRecord) -> FormattedPrompt:
    return format_prompt(record.question, record.options, record.instruction)


def _labelled(
    record: QuestionRecord, prompt: FormattedPrompt, encoded: Encoded, truncated: bool
) -> TokenizedPrompt:
    chars = CharClasses.of(prompt)
    return TokenizedPrompt(
        record, prompt, chars, encoded, label_tokens(chars, encoded.offsets, encoded.special), truncated
    )


def _shorten(item: TokenizedPrompt, max_tokens: int) -> QuestionRecord:
    """The record with its question cut so that about ``n_tokens - max_tokens`` question tokens go."""
    excess = len(item.encoded.input_ids) - max_tokens
    question_tokens = np.flatnonzero(item.labels.sections == SECTION_INDEX["question"])
    keep = len(question_tokens) - excess
    if keep < 1:
        raise DataError(
            f"record {item.record.record_id!r}: everything but the question takes "
            f"{len(item.encoded.input_ids) - len(question_tokens)} tokens, leaving no room for the question "
            f"within data.max_tokens={max_tokens}; raise data.max_tokens"
        )
    cut = int(item.encoded.offsets[question_tokens[keep - 1], 1]) - item.prompt.question_start
    question = item.record.question[:cut].rstrip()
    if len(question) >= len(item.record.question):  # the boundary did not move: drop one more character
        question = item.record.question[: len(item.record.question) - 1].rstrip()
    if not question:
        raise DataError(f"record {item.record.record_id!r}: question would be empty after truncation")
    return replace(item.record, question=question)


def tokenize_records(
    records: Sequence[QuestionRecord], tokenizer: Any, max_tokens: int
) -> list[TokenizedPrompt]:
    """Tokenise and label every record, truncating questions of prompts longer than ``max_tokens``."""
    prompts = [_formatted(r) for r in records]
    encoded = encode_batch(tokenizer, [p.text for p in prompts])
    items = [_labelled(r, p, e, False) for r, p, e in zip(records, prompts, encoded, strict=True)]
    for round_ in range(MAX_TRUNCATION_ROUNDS + 1):
        long = [i for i, item in enumerate(items) if len(item.encoded.input_ids) > max_tokens]
        if not long:
            return items
        if round_ == MAX_TRUNCATION_ROUNDS:
            raise DataError(
                f"records {[items[i].record.record_id for i in long[:5]]} still exceed "
                f"data.max_tokens={max_tokens} after {MAX_TRUNCATION_ROUNDS} truncation rounds"
            )
        shortened = [_shorten(items[i], max_tokens) for i in long]
        prompts = [_formatted(r) for r in shortened]
        encoded = encode_batch(tokenizer, [p.text for p in prompts])
        for i, record, prompt, enc in zip(long, shortened, prompts, encoded, strict=True):
            items[i] = _labelled(record, prompt, enc, True)
    raise AssertionError("unreachable")
