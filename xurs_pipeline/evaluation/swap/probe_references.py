"""Each probe's references of a reference set (``attribution/variants.py``), as token ids fitted to the probe.

One call per (set, probe): ``(n, L)`` int64 token ids, one row per reference, or None for the zero
embeddings. Training prompts come from the training split (``attribution.reference_order`` for
``train:k``; drawn for ``marginal:K`` with a generator seeded by ``evaluation.seed`` and the probe's id);
the counterfactual text is prepared as ``prepare`` prepares it (``behaviour.both_resolved``) and aligned
to the probe by token sequence (``references.align_paired``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import AttributionInputError
from xurs_pipeline.attribution.references import align_paired, pad_or_truncate, prepare_training
from xurs_pipeline.attribution.variants import KEY, ReferenceSet
from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.references import reference_collections
from xurs_pipeline.evaluation.swap.behaviour import both_resolved


@dataclass(frozen=True)
class ReferenceSource:
    """What the references are made of: the training prompts (record id -> token ids, in file order), the
    attribution's reference settings, the tokenizer and ``data.max_tokens`` (the counterfactual text), the
    pad id and ``evaluation.seed`` (the marginal draws)."""

    training: dict[str, list[int]]
    attribution: AttributionConfig
    tokenizer: Any
    max_tokens: int
    pad_id: int
    seed: int

    @classmethod
    def of(
        cls, prompts: pd.DataFrame, attribution: AttributionConfig, tokenizer: Any, max_tokens: int, seed: int
    ) -> ReferenceSource:
        """From the prepared prompts (their training split)."""
        train = prompts[prompts["split"] == "train"]
        training = {
            str(r): list(map(int, ids)) for r, ids in zip(train["record_id"], train["input_ids"], strict=True)
        }
        return cls(training, attribution, tokenizer, max_tokens, int(tokenizer.pad_token_id), seed)


def probe_reference_ids(
    chosen: ReferenceSet, probe: QuestionRecord, ids: Sequence[int], source: ReferenceSource
) -> np.ndarray | None:
    """The references of ``chosen`` for the probe (``ids``: its prepared token ids, L): (n, L) int64, or
    None for the zero embeddings."""
    length = len(ids)
    if chosen.kind == "zero":
        return None
    if chosen.kind == "pad":
        return np.full((1, length), source.pad_id, dtype=np.int64)
    if chosen.kind == "counterfactual":
        text = prepare_records([both_resolved(probe)], source.tokenizer, source.max_tokens).frame
        aligned = align_paired(list(ids), list(map(int, text["input_ids"].iloc[0])), source.pad_id)
        return np.asarray([aligned.prepared_ids], dtype=np.int64)
    if chosen.kind == "train":
        return _first_training(chosen, ids, source)
    rng = np.random.default_rng([source.seed, zlib.crc32(probe.record_id.encode())])
    names = list(source.training)
    if not names:
        raise AttributionInputError(f"{KEY}={chosen.name}: the prepared prompts hold no training split")
    drawn = rng.integers(0, len(names), chosen.count)
    rows = [pad_or_truncate(source.training[names[i]], length, source.pad_id) for i in drawn]
    return np.asarray(rows, dtype=np.int64)


def _first_training(chosen: ReferenceSet, ids: Sequence[int], source: ReferenceSource) -> np.ndarray:
    cfg = source.attribution
    try:
        (first,) = reference_collections(
            list(source.training), chosen.count, 1, cfg.reference_order, cfg.reference_hash_seed
        )
    except ValueError as err:
        raise AttributionInputError(f"{KEY}={chosen.name}: {err}") from None
    refs = prepare_training(
        list(ids),
        [source.training[r] for r in first],
        first,
        source.pad_id,
        torch.device("cpu"),
        cfg.reference_alignment,
    )
    return refs.prepared_ids.numpy()  # type: ignore[union-attr]
