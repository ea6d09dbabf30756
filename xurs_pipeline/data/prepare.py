"""Records -> the prepared-prompts table (schema in ``schema.py``) and its summary numbers. No file I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.data.records import QuestionRecord, check_unique_ids, normalised
from xurs_pipeline.data.schema import PROMPT_COLUMNS, SECTION_NAMES, SPLITS, SWAP_COLUMNS, SYNTHETIC_COLUMNS
from xurs_pipeline.data.sections import tokens_in_span
from xurs_pipeline.data.tokenize import TokenizedPrompt, tokenize_records


@dataclass(frozen=True)
class PreparedPrompts:
    frame: pd.DataFrame  # one row per prompt, PROMPT_COLUMNS (+ SYNTHETIC_COLUMNS for synthetic sources)
    summary: dict[str, Any]


def _positions(item: TokenizedPrompt, span: tuple[int, int]) -> list[int]:
    """Token indices covering a character span of the (possibly truncated) question."""
    limit = len(item.record.question)
    start, end = min(span[0], limit), min(span[1], limit)
    offset = item.prompt.question_start
    return tokens_in_span(
        item.chars, item.encoded.offsets, item.encoded.special, (offset + start, offset + end)
    )


def _row(item: TokenizedPrompt) -> dict[str, Any]:
    record, enc = item.record, item.encoded
    row: dict[str, Any] = {
        "record_id": record.record_id,
        "split": record.split,
        "source": record.source,
        "question": record.question,
        "options": list(record.options),
        "answer_idx": record.answer_idx,
        "prompt": item.prompt.text,
        "input_ids": enc.input_ids.tolist(),
        "token_start": enc.offsets[:, 0].tolist(),
        "token_end": enc.offsets[:, 1].tolist(),
        "sections": item.labels.names(),
        "eligible": item.labels.eligible.tolist(),
        "truncated": item.truncated,
    }
    info = record.synthetic
    if info is not None:
        row.update(
            family=info.family,
            pair_id=info.pair_id,
            variant=info.variant,
            detail=info.detail,
            has_result=info.has_result,
            template_id=info.template_id,
            template_unseen=info.template_unseen,
            arrangement=info.arrangement,
            target_masses=list(info.target_masses),
            clue_positions=_positions(item, info.clue_span),
            case_positions=_positions(item, info.case_span),
        )
        if info.cue_spans:
            row.update(
                cue_positions=[_positions(item, span) for span in info.cue_spans],
                cue_answers=list(info.cue_answers),
                cue_resolved=list(info.cue_resolved),
                cue_masses=[list(m) for m in info.cue_masses],
            )
    return row


def _stats(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {"mean": 0.0, "min": 0.0, "median": 0.0, "max": 0.0}
    return {
        "mean": float(values.mean()),
        "min": float(values.min()),
        "median": float(np.median(values)),
        "max": float(values.max()),
    }


def leakage(records: Sequence[QuestionRecord]) -> dict[str, Any]:
    """Test questions whose text (whitespace, case and zero-width characters aside) also occurs in the
    train or dev split: counts per split and the first 20 test ids. MedQA rows carry no ids, so
    content is the only way to see a test question that was also trained on."""
    by_split: dict[str, set[str]] = {s: set() for s in SPLITS}
    for r in records:
        by_split[r.split].add(normalised(r.question))
    test = [r for r in records if r.split == "test"]
    leaked = {
        s: [r.record_id for r in test if normalised(r.question) in by_split[s]] for s in ("train", "dev")
    }
    ids = sorted({i for found in leaked.values() for i in found})
    return {
        "test_in_train": len(leaked["train"]),
        "test_in_dev": len(leaked["dev"]),
        "n_test_leaked": len(ids),
        "leaked_test_ids": ids[:20],
    }


def summarise(items: Sequence[TokenizedPrompt], max_tokens: int) -> dict[str, Any]:
    """Counts per split, truncation, prompt lengths, eligible-token fraction per prompt, section shares."""
    lengths = np.array([len(i.encoded.input_ids) for i in items])
    eligible = np.array([i.labels.eligible.mean() if len(i.labels.eligible) else 0.0 for i in items])
    section_counts = sum(
        (np.bincount(i.labels.sections, minlength=len(SECTION_NAMES)) for i in items),
        np.zeros(len(SECTION_NAMES), dtype=np.int64),
    )
    total = max(int(lengths.sum()), 1)
    truncated = [i.record.record_id for i in items if i.truncated]
    return {
        "n_records": len(items),
        "splits": {s: sum(i.record.split == s for i in items) for s in SPLITS},
        "max_tokens": max_tokens,
        "n_truncated": len(truncated),
        "truncated_ids": truncated[:20],
        "tokens_per_prompt": _stats(lengths.astype(float)),
        "eligible_fraction": _stats(eligible),
        "n_without_eligible": int((eligible == 0).sum()),
        "n_straddling_tokens": sum(i.labels.straddling for i in items),
        "section_token_share": {name: int(section_counts[k]) / total for k, name in enumerate(SECTION_NAMES)},
        "leakage": leakage([i.record for i in items]),
    }


def prepare_records(records: Sequence[QuestionRecord], tokenizer: Any, max_tokens: int) -> PreparedPrompts:
    """Tokenise and label ``records`` (ids must be unique); rows keep the order of ``records``."""
    check_unique_ids(records)
    items = tokenize_records(records, tokenizer, max_tokens)
    rows = [_row(item) for item in items]
    synthetic = any(r.synthetic is not None for r in records)
    columns = list(PROMPT_COLUMNS) + (list(SYNTHETIC_COLUMNS) if synthetic else [])
    if any(r.synthetic is not None and r.synthetic.cue_spans for r in records):
        columns += list(SWAP_COLUMNS)
    frame = pd.DataFrame(rows, columns=columns)
    return PreparedPrompts(frame, summarise(items, max_tokens))
