"""Inputs of the swap control's measures (``measures.py``): each role's accuracy by which cue resolves the
question, and the input-only ranking of the probes against the references the attributions used.

Accuracy (Sec. 6.1's argmax BetP) is read on the test records that are not probes, by role: where the
role's own cue resolves the question (a model that reads its cue is right; chance 1/4), and where only the
other cue does (the learned cue names a pair holding the label: a model that reads only its cue is right on
1/2 of them, and ``follows_other``, predicting the other cue's condition when it lies outside that pair,
stays near 0). For model C (``cue`` 0, labels from the texts whose cues agree): where the test question's
two cues name the same label, whichever it reads (a reader of one cue is right on about 5/6 of them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import reference_pool
from xurs_pipeline.attribution.references import prepare_training
from xurs_pipeline.credal import FOCAL_INDEX, pignistic
from xurs_pipeline.data.synthetic.swap import relabel_by_cue
from xurs_pipeline.evaluation.nulls import input_only_scores


def role_test_records(prompts: pd.DataFrame, cue: int) -> pd.DataFrame:
    """The records a role's accuracy is read on: ``prompts`` relabelled by ``cue`` (1 or 2; 0: cue 1, kept
    where the two cues agree), kept where they are test records with a result (probes have none), in the
    prompts' order."""
    rows = relabel_by_cue(prompts, cue or 1)
    agree = rows["cue_answers"].map(lambda a: int(a[0]) == int(a[1])) | bool(cue)
    return rows[(rows["split"] == "test") & rows["has_result"].astype(bool) & agree]


def role_accuracy(masses: torch.Tensor, rows: pd.DataFrame, cue: int) -> dict[str, float | int]:
    """masses (n, 15) of a model on ``rows`` (prepared two-cue prompts, same order); ``cue`` (1 or 2) the
    cue its labels followed (0: both, ``rows`` where they agree). Accuracy where that cue resolves the
    question (0: every row), and where only the other does."""
    predicted = pignistic(masses.double()).argmax(-1).numpy()  # (n,)
    k, other = (cue - 1, 2 - cue) if cue else (0, 1)
    answers = np.array([a[k] for a in rows["cue_answers"]])
    other_answers = np.array([a[other] for a in rows["cue_answers"]])
    own = np.array([bool(r[k]) or not cue for r in rows["cue_resolved"]], dtype=bool)
    other_resolved = np.array([bool(r[other]) and bool(cue) for r in rows["cue_resolved"]], dtype=bool)
    only_other = ~own & other_resolved
    named = [_in_pair(row, k, o) for row, o in zip(rows.itertuples(), other_answers, strict=True)]
    outside = only_other & ~np.array(named, dtype=bool)
    correct = predicted == answers
    return {
        "accuracy_own_cue": _mean(correct, own),
        "n_own_cue": int(own.sum()),
        "chance_own_cue": 0.25,
        "accuracy_other_cue_only": _mean(correct, only_other),
        "n_other_cue_only": int(only_other.sum()),
        "chance_other_cue_only": 0.5,  # the own cue's pair holds the label
        "follows_other": float((predicted == other_answers)[outside].mean())
        if outside.any()
        else float("nan"),
        "n_follows_other": int(outside.sum()),
    }


def _mean(values: np.ndarray, where: np.ndarray) -> float:
    return float(values[where].mean()) if where.any() else float("nan")


def _in_pair(row, k: int, option: int) -> bool:
    """Does cue ``k`` name ``option`` (its label, or either member of its pair)? The options with positive
    singleton mass in the role's prescribed masses (``synthetic/targets.py``) are exactly those."""
    return float(row.cue_masses[k][FOCAL_INDEX[(option,)]]) > 0


def prepared_references(
    prompts: pd.DataFrame, record_ids: Sequence[str], cfg: AttributionConfig, pad_id: int
) -> dict[str, np.ndarray]:
    """The training references ``cfg`` gives the attribution (first collection), prepared for each question as
    the attribution prepares them (``cfg.reference_alignment``): record id -> (n_refs, seq) int64."""
    if cfg.reference != "train":
        raise ValueError(f"attribution.reference={cfg.reference!r}: the swap study needs training references")
    pool_ids, pool_tokens = reference_pool(prompts, cfg, None)
    by_id = prompts.set_index("record_id")
    out = {}
    for record_id in record_ids:
        ids = [int(t) for t in by_id.loc[record_id, "input_ids"]]
        refs = prepare_training(
            ids, pool_tokens[0], pool_ids[0], pad_id, torch.device("cpu"), cfg.reference_alignment
        )
        out[record_id] = refs.prepared_ids.numpy()
    return out


def input_only_magnitudes(
    prompts: pd.DataFrame, references: dict[str, np.ndarray], embedding: np.ndarray
) -> dict[str, np.ndarray]:
    """The input-only ranking (``nulls.input_only_scores``) of each question against its prepared
    ``references`` (:func:`prepared_references`): record id -> (seq,) float64. It reads no weight past the
    embedding."""
    by_id = prompts.set_index("record_id")
    return {
        record_id: input_only_scores([int(t) for t in by_id.loc[record_id, "input_ids"]], refs, embedding)
        for record_id, refs in references.items()
    }
