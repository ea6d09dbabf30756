"""An attribution callable for the model-randomisation check, built on ``xurs_pipeline.attribution``.

It re-runs the attribute stage's estimator (same method, references and budget) on a few questions
for any model. The explained options are given per question (the attribution run's own rows), or else
the correct answer (``attribution.target='correct'``), so the trained and the randomised model explain
the same option even when their predictions differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pandas as pd
from torch import nn

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import reference_pool, select_questions
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.question import ReferencePool
from xurs_pipeline.evaluation.comparisons import RunRecord, token_magnitude
from xurs_pipeline.evaluation.randomisation import AttributeFn


def attribution_callable(
    prompts: pd.DataFrame,
    cfg: AttributionConfig,
    record_ids: Sequence[str],
    pad_id: int,
    max_positions: int | None,
    targets: Mapping[str, tuple[int, ...]] | None = None,
) -> AttributeFn:
    """``model -> RunRecords`` of ``record_ids`` under ``cfg``: the options ``targets[record_id]``, or
    the correct answer."""
    cfg = dataclasses.replace(cfg, record_ids=list(record_ids), target="correct", progress=False)
    questions = select_questions(prompts, cfg, max_positions)
    refs = reference_pool(prompts, cfg, max_positions) if cfg.reads_training_references else None

    def attribute(model: nn.Module) -> list[RunRecord]:
        pool = None if refs is None else ReferencePool(*refs).measured(model, cfg)
        out = []
        for q in questions:
            chosen = None if targets is None else tuple(targets[q.record_id])
            result = attribute_question(model, q, pool, cfg, pad_id, targets=chosen)  # type: ignore[arg-type]
            if result.failure is not None:
                raise FloatingPointError(result.failure.message())
            for row in result.rows:
                e = row.coords["e"].double().numpy()
                changed = tuple(row.changed_positions)
                out.append(
                    RunRecord(
                        row.record_id,
                        row.target,
                        row.reference,
                        token_magnitude(e),
                        e,
                        row.width_input,
                        changed_positions=changed,
                    )
                )
        return out

    return attribute
