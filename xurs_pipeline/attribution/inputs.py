"""From prepared prompts to checked attribution inputs: the questions and the training-reference pool.

Every bad input is found here, before any computation, so a failing run writes nothing: unknown
question ids, questions without eligible tokens (Sec. 5.2), prompts longer than the model's context,
missing paired prompts, and reference collections smaller than requested.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from xurs_pipeline.attribution.config import AttributionConfig, check_gradient_budget
from xurs_pipeline.attribution.model import WidthModel
from xurs_pipeline.attribution.question import ReferencePool
from xurs_pipeline.attribution.records import Question
from xurs_pipeline.errors import XursError


class AttributionInputError(XursError, ValueError):
    """The questions or references asked for cannot be attributed; says which and what is allowed."""


def _ids(row: pd.Series) -> tuple[int, ...]:
    return tuple(int(i) for i in row["input_ids"])


def _check_length(record_id: str, length: int, max_positions: int | None, what: str) -> None:
    if max_positions is not None and length > max_positions:
        raise AttributionInputError(
            f"record {record_id}: {what} has L={length} tokens, more than the model's context of "
            f"{max_positions} positions. Lower data.max_tokens (prompts are truncated to it) or use a "
            f"backbone with a longer context."
        )


def _pair(prompts: pd.DataFrame, row: pd.Series) -> pd.Series:
    record_id = row["record_id"]
    if "pair_id" not in prompts.columns or "has_result" not in prompts.columns:
        raise AttributionInputError(
            f"attribution.reference='aligned': prepared data has no pair_id/has_result columns (source "
            f"{row.get('source', '?')!r}); aligned references need a synthetic dataset "
            f"(data.source=synthetic_*)"
        )
    mates = prompts[
        (prompts["pair_id"] == row["pair_id"])
        & (prompts["record_id"] != record_id)
        & (prompts["has_result"] != row["has_result"])
    ]
    if len(mates) != 1:
        raise AttributionInputError(
            f"record {record_id}: expected exactly one paired prompt with pair_id={row['pair_id']!r} and "
            f"has_result={not row['has_result']}, found {len(mates)}"
        )
    return mates.iloc[0]


def result_filter(cfg: AttributionConfig) -> bool | None:
    """The ``has_result`` value the explained questions must have (None: any). An aligned reference is
    the other member of the question's pair, so ``all`` there means the paper's ``with_result``."""
    if cfg.result_filter == "all":
        return True if cfg.reference == "aligned" else None
    return cfg.result_filter == "with_result"


def question_budgets(questions: Sequence[Question], cfg: AttributionConfig) -> list[int]:
    """Each question's most gradient evaluations (``AttributionConfig.gradient_budget`` with its own path
    pieces), checked against ``attribution.max_grad_evals`` when the stage starts: the longest prompt,
    not ``data.max_tokens``, bounds the block path's pieces here."""
    if not questions:
        return []
    longest = max(questions, key=lambda q: len(q.input_ids))
    try:
        check_gradient_budget(cfg, len(longest.input_ids), f"record {longest.record_id!r}")
    except ValueError as err:
        raise AttributionInputError(str(err)) from None
    return [cfg.gradient_budget(cfg.pieces_per_reference(len(q.input_ids))).per_question for q in questions]


def check_record_ids(prompts: pd.DataFrame, record_ids: Sequence[str]) -> None:
    """``attribution.record_ids`` must name prepared records: AttributionInputError naming the others.
    The check stage refuses them earlier, before any stage deletes an output (``tasks/check.py``)."""
    known = set(prompts["record_id"])
    unknown = [r for r in record_ids if r not in known]
    if unknown:
        raise AttributionInputError(
            f"attribution.record_ids: {unknown} not in the prepared data ({len(prompts)} records, e.g. "
            f"{list(prompts['record_id'][:3])}). Use record ids of prepared/prompts.parquet."
        )


def select_questions(
    prompts: pd.DataFrame, cfg: AttributionConfig, max_positions: int | None
) -> list[Question]:
    """The questions to attribute, in prepared-data order; ``cfg.record_ids`` overrides the split."""
    if cfg.record_ids:
        check_record_ids(prompts, cfg.record_ids)
        chosen = prompts[prompts["record_id"].isin(cfg.record_ids)]
    else:
        chosen = prompts[prompts["split"] == cfg.split]
        wanted = result_filter(cfg)
        if wanted is not None and "has_result" in chosen.columns:
            chosen = chosen[chosen["has_result"].astype(bool) == wanted]
        elif wanted is not None and cfg.reference != "aligned":  # aligned: _pair names the missing columns
            raise AttributionInputError(
                f"attribution.result_filter={cfg.result_filter!r}: prepared data has no has_result column; "
                "it applies to controlled synthetic data only (data.source=synthetic_*): set it to 'all'"
            )
        if cfg.max_questions:
            chosen = chosen.iloc[: cfg.max_questions]
    if chosen.empty:
        raise AttributionInputError(
            f"attribution.split={cfg.split!r}: no questions to attribute (prepared data has splits "
            f"{sorted(prompts['split'].unique())})"
        )
    questions = []
    for _, row in chosen.iterrows():
        record_id = str(row["record_id"])
        if not any(bool(v) for v in row["eligible"]):
            raise AttributionInputError(
                f"record {record_id}: no eligible token (Sec. 5.2: question or option text containing a "
                f"letter or digit); its attribution could not be ranked. Drop it from attribution.record_ids."
            )
        ids = _ids(row)
        _check_length(record_id, len(ids), max_positions, "the prompt")
        paired_id = paired_ids = None
        if cfg.reference == "aligned":
            mate = _pair(prompts, row)
            paired_id, paired_ids = str(mate["record_id"]), _ids(mate)
            _check_length(paired_id, len(paired_ids), max_positions, "the paired prompt")
        read = _read_groups(row, cfg)
        questions.append(Question(record_id, ids, int(row["answer_idx"]), paired_id, paired_ids, read))
    return questions


def _read_groups(row: pd.Series, cfg: AttributionConfig) -> tuple[tuple[int, ...], ...] | None:
    """The positions of each cue (the prompts' ``cue_positions``, the swap study's probes) where kronrod's
    ``read`` rule orders them; None where no rule reads them. A ``read`` rule on a record without cues is
    refused by name."""
    if cfg.method != "kronrod" or "read" not in (cfg.kronrod_stop, cfg.kronrod_lead):
        return None
    cues = row.get("cue_positions")
    if cues is None or len(cues) < 2 or any(len(c) == 0 for c in cues):
        raise AttributionInputError(
            f"record {row['record_id']}: attribution.kronrod_stop/kronrod_lead='read' orders the prompt's "
            "cues (prepared cue_positions, data.source=synthetic_swap); this record has none"
        )
    return tuple(tuple(int(i) for i in c) for c in cues)


def natural_pool(
    model: WidthModel, prompts: pd.DataFrame, cfg: AttributionConfig, max_positions: int | None
) -> ReferencePool | None:
    """The training references ``cfg`` reads (:func:`reference_pool`) with their natural widths under the
    configured target (:meth:`ReferencePool.measured`); None when it reads none (zero or aligned
    references, a token method that reads no reference)."""
    if not cfg.reads_training_references:
        return None
    return ReferencePool(*reference_pool(prompts, cfg, max_positions)).measured(model, cfg)


def reference_pool(
    prompts: pd.DataFrame, cfg: AttributionConfig, max_positions: int | None
) -> tuple[list[tuple[str, ...]], list[list[list[int]]]]:
    """Training-reference collections (record ids, token ids) per ``attribution.*`` (App. B.2); a token
    method's pool is the first reference alone (``AttributionConfig.pool_shape``)."""
    from xurs_pipeline.data.references import reference_collections

    train = prompts[prompts["split"] == "train"]
    per_collection, count = cfg.pool_shape
    try:
        collections = reference_collections(
            list(train["record_id"]), per_collection, count, cfg.reference_order, cfg.reference_hash_seed
        )
    except ValueError as err:
        raise AttributionInputError(
            f"attribution.n_collections={cfg.n_collections}, attribution.refs_per_collection="
            f"{cfg.refs_per_collection}: {err}"
        ) from err
    tokens = dict(zip(train["record_id"], (_ids(r) for _, r in train.iterrows()), strict=True))
    for collection in collections:
        for record_id in collection:
            _check_length(record_id, len(tokens[record_id]), max_positions, "the reference prompt")
    return (
        [tuple(c) for c in collections],
        [[list(tokens[r]) for r in c] for c in collections],
    )
