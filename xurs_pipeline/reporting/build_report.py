"""Turn one experiment's artifacts into HTML explanation pages (one per explained question) and an index.

Per explained (record, option) row of the attributions: the prompt's tokens with their sections and
eligibility (prepared prompts), the token attributions and the reference width (attributions), the
intervals, BetP and masses of the prediction (predictions), the zero-masking advantage (mask_eval) and
the completeness residual checked against the configured tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.sections import SHARE_SECTIONS, section_shares
from xurs_pipeline.reporting.front_page import FrontPage, render_front, table_page
from xurs_pipeline.reporting.html import (
    ADVANTAGE_CHECK,
    RESIDUAL_CHECK,
    CheckRow,
    ExplanationView,
    Mark,
    ReportProvenance,
    write_report,
)
from xurs_pipeline.reporting.html_view import MethodScores
from xurs_pipeline.reporting.method_findings import finding_label

TARGET_RULES = {"predicted": "argmax BetP on the original prompt", "correct": "the correct answer"}
# Prepared-prompt columns of token positions that a question page outlines, and their labels; a column the
# prompts lack, or an empty span, is not drawn.
MARK_COLUMNS: tuple[tuple[str, str], ...] = (("clue_positions", "clue"),)
# The two-cue swap control's prompts (data/synthetic/swap.py): one position array per cue, drawn as "cue 1",
# "cue 2" in place of the clue (which is cue 1 under model A and no clue under model B).
CUE_COLUMN = "cue_positions"


def marks_of(prompt: pd.Series, columns: Sequence[tuple[str, str]] = MARK_COLUMNS) -> tuple[Mark, ...]:
    """The labelled token spans of one prepared prompt (``clue_positions``, both cues' ``cue_positions``)
    that its page outlines."""
    cues = prompt.get(CUE_COLUMN)
    if cues is not None and len(cues) and all(np.ndim(c) == 1 for c in cues):
        spans = [(f"cue {i}", positions) for i, positions in enumerate(cues, start=1)]
    else:
        spans = [(label, prompt.get(column)) for column, label in columns]
    return tuple(
        Mark(label, tuple(int(p) for p in positions))
        for label, positions in spans
        if positions is not None and np.ndim(positions) == 1 and len(positions)
    )


def _shares(magnitude: np.ndarray, sections: Sequence[str], record_id: str) -> tuple[tuple[str, float], ...]:
    if not np.isfinite(magnitude).all() or magnitude.sum() <= 0:
        return ()
    return tuple(zip(SHARE_SECTIONS, section_shares(magnitude, sections, record_id).tolist(), strict=True))


@dataclass(frozen=True)
class PageContext:
    """What every explanation page of one run shares: where its numbers come from, the residual tolerance
    its check applies (``evaluation.numerics.max_residual_max``) and the rule that chose the explained
    option (``attribution.target``)."""

    provenance: ReportProvenance
    residual_max: float
    target_rule: str


def _checks(
    row: Any, advantage: Mapping[tuple[str, int], float], residual_max: float
) -> tuple[CheckRow, ...]:
    """One attribution row's page checks: its completeness residual against ``residual_max`` (none for a
    token method without a completeness rule) and its zero-masking advantage where mask_eval measured it."""
    residual = float(row.residual)
    label = "Completeness residual R (Eq. 9)"
    checks = [CheckRow(RESIDUAL_CHECK, label, residual, residual_max, "<=", residual <= residual_max)]
    if math.isnan(residual):  # a token method without a completeness rule (attribution/methods/)
        checks = []
    key = (str(row.record_id), int(row.target))
    if key in advantage:
        checks.append(CheckRow(ADVANTAGE_CHECK, "Zero-masking advantage A(x) (Eq. 8)", advantage[key]))
    return tuple(checks)


def _view(
    row: Any,
    prompt: pd.Series,
    pred: pd.Series,
    tokens: Sequence[str],
    context: PageContext,
    checks: tuple[CheckRow, ...],
) -> ExplanationView:
    """The page of one attribution ``row``: its prompt's tokens and sections, its prediction's intervals,
    BetP and masses, its token attributions and its ``checks``."""
    magnitude = np.asarray(row.token_magnitude, dtype=float)
    return ExplanationView(
        record_id=str(row.record_id),
        question=str(prompt["question"]),
        options=tuple(str(o) for o in prompt["options"]),
        tokens=tuple(tokens),
        signed=tuple(float(v) for v in row.token_signed),
        magnitude=tuple(magnitude.tolist()),
        sections=tuple(str(s) for s in prompt["sections"]),
        eligible=tuple(bool(e) for e in prompt["eligible"]),
        explained=int(row.target),
        explained_rule=TARGET_RULES.get(context.target_rule, context.target_rule),
        bel=tuple(float(v) for v in pred["bel"]),
        pl=tuple(float(v) for v in pred["pl"]),
        betp=tuple(float(v) for v in pred["betp"]),
        masses=tuple(float(v) for v in pred["masses"]),
        provenance=context.provenance,
        section_shares=_shares(magnitude, list(prompt["sections"]), str(row.record_id)),
        checks=checks,
        reference_width=None if math.isnan(row.width_reference_mean) else float(row.width_reference_mean),
        gold=int(prompt["answer_idx"]),
        marks=marks_of(prompt),
    )


def explanation_views(
    prompts: pd.DataFrame,
    predictions: pd.DataFrame,
    attributions: pd.DataFrame,
    per_question: pd.DataFrame,
    tokens_of: Mapping[str, Sequence[str]],
    context: PageContext,
) -> list[ExplanationView]:
    """One view per attribution row. ``tokens_of[record_id]``: the tokenizer's pieces of the prompt."""
    prompt_by_id = prompts.set_index("record_id", drop=False)
    prediction_by_id = predictions.set_index("record_id", drop=False)
    advantage = {
        (r.record_id, int(r.target)): float(r.advantage)
        for r in per_question.itertuples(index=False)
        if getattr(r, "target_fn", "width") == "width"
    }
    views = []
    for row in attributions.itertuples(index=False):
        rid = str(row.record_id)
        if rid not in prediction_by_id.index:
            raise KeyError(f"record {rid!r} is attributed but has no prediction; rerun `dvc repro predict`")
        prompt, pred = prompt_by_id.loc[rid], prediction_by_id.loc[rid]
        checks = _checks(row, advantage, context.residual_max)
        views.append(_view(row, prompt, pred, tokens_of[rid], context, checks))
    return views


def with_comparison(
    views: Sequence[ExplanationView], method: str, other: str, other_rows: pd.DataFrame
) -> list[ExplanationView]:
    """``views`` (of ``method``'s attributions) each with ``other``'s token magnitudes on the same question
    and option beside its own (``ExplanationView.methods``), each labelled with the swap control's finding; a
    question ``other_rows`` lacks (not finite there) keeps its page without a comparison."""
    magnitude = {
        (str(r.record_id), int(r.target)): tuple(float(v) for v in r.token_magnitude)
        for r in other_rows.itertuples(index=False)
    }
    first = (method, finding_label(method))
    second = (other, finding_label(other))
    return [
        replace(view, methods=(MethodScores(*first, view.magnitude), MethodScores(*second, magnitude[key])))
        if (key := (view.record_id, view.explained)) in magnitude
        else view
        for view in views
    ]


def build_report(
    views: Sequence[ExplanationView],
    out_dir: Path,
    experiment: str,
    front: FrontPage | None = None,
    table_markdown: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the pages, each table of ``table_markdown`` (name -> Markdown) as ``tables/<name>.html`` and
    ``index.html`` (the ``front`` page above the explanation list) under ``out_dir`` (all rendered before
    any is written)."""
    tables = {f"tables/{name}.html": table_page(name, text) for name, text in (table_markdown or {}).items()}
    return write_report(
        views,
        out_dir,
        title=f"XU-RS report: {experiment}",
        subtitle="Why is the model uncertain? Token attributions of the explained answer's credal width",
        front=render_front(front) if front is not None else None,
        extra_pages=tables,
    )
