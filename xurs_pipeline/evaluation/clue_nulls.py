"""The clue study's localisation beside its nulls (App. C; ``nulls.py``).

Three rankings of the same questions against the same references, measured by the same App. C
statistics over the positions that can take attribution:

- ``trained``: the attribution run's token magnitudes (the trained model);
- ``randomised_head``: the same estimator, references and explained option with the classifier's head
  re-initialised (the model-randomisation check's first step);
- ``input_only``: no model past the embedding, ``nulls.input_only_scores`` of the references as
  prepared for attribution.

A localisation that the randomised head or the input-only ranking matches does not show what the model
learned: it holds by construction of the references (where they differ from the question).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.attribution.references import prepare_training
from xurs_pipeline.evaluation.artifacts import prompts_by_id
from xurs_pipeline.evaluation.comparisons import RunRecord
from xurs_pipeline.evaluation.evidence import localisation_summary, localisation_table
from xurs_pipeline.evaluation.nulls import input_only_scores, live_positions

RANKINGS = ("trained", "randomised_head", "input_only")


def prepared_references(
    frame: pd.DataFrame, prompts: pd.DataFrame, alignment: str, pad_id: int
) -> dict[str, np.ndarray | None]:
    """Per record id, its references as the attribution prepared them, (n_refs, seq) int64, or None for
    the zero baseline: training prompts re-prepared from ``reference_record_ids`` with
    ``attribution.reference_alignment`` (``prepare_training``), an aligned paired prompt as stored in
    ``prepared_input_ids``; None too for a method that reads no reference (``reference='none'``)."""
    trained = frame[frame["reference"] == "train"]
    ids = list(frame["record_id"]) + [r for refs in trained["reference_record_ids"] for r in refs]
    by_id = prompts_by_id(prompts, list(dict.fromkeys(ids)), "attribution run")
    out: dict[str, np.ndarray | None] = {}
    for row in frame.drop_duplicates("record_id").itertuples(index=False):
        rid = str(row.record_id)
        x = [int(i) for i in by_id.loc[rid, "input_ids"]]
        if row.reference in ("zero", "none"):  # none: a token method that reads no reference (every position)
            out[rid] = None
        elif row.reference == "aligned":
            out[rid] = np.asarray([row.prepared_input_ids], dtype=np.int64)
        else:
            refs = [str(r) for r in row.reference_record_ids]
            tokens = [[int(i) for i in by_id.loc[r, "input_ids"]] for r in refs]
            prepared = prepare_training(x, tokens, refs, pad_id, torch.device("cpu"), alignment)
            out[rid] = prepared.prepared_ids.numpy()  # type: ignore[union-attr]
    return out


def _input_ids(prompts: pd.DataFrame, record_ids: Sequence[str]) -> dict[str, np.ndarray]:
    by_id = prompts_by_id(prompts, list(record_ids), "attribution run")
    return {r: np.asarray(by_id.loc[r, "input_ids"], dtype=np.int64) for r in record_ids}


def live_by_question(
    prompts: pd.DataFrame, references: Mapping[str, np.ndarray | None], embedding: np.ndarray | None = None
) -> dict[str, tuple[int, ...]]:
    """Per record id, the positions that can take attribution (``nulls.live_positions``)."""
    inputs = _input_ids(prompts, list(references))
    return {r: live_positions(inputs[r], refs, embedding) for r, refs in references.items()}


def input_only_frame(
    frame: pd.DataFrame,
    prompts: pd.DataFrame,
    references: Mapping[str, np.ndarray | None],
    embedding: np.ndarray,
) -> pd.DataFrame:
    """The input-only ranking as attribution rows (record_id, target, reference, token_magnitude), one per
    row of ``frame``: ``nulls.input_only_scores`` with embedding E (vocab, hidden)."""
    inputs = _input_ids(prompts, list(dict.fromkeys(frame["record_id"])))
    rows = [
        {
            "record_id": r.record_id,
            "target": r.target,
            "reference": r.reference,
            "token_magnitude": input_only_scores(
                inputs[str(r.record_id)], references[str(r.record_id)], embedding
            ),
        }
        for r in frame.itertuples(index=False)
    ]
    return pd.DataFrame(rows)


def records_frame(records: Sequence[RunRecord]) -> pd.DataFrame:
    """RunRecords (e.g. the randomised head's) as attribution rows for :func:`localisation_table`."""
    return pd.DataFrame(
        [
            {
                "record_id": r.record_id,
                "target": r.c,
                "reference": r.reference,
                "token_magnitude": r.magnitude,
            }
            for r in records
        ]
    )


def clue_nulls(
    rankings: Mapping[str, pd.DataFrame],
    prompts: pd.DataFrame,
    live: Mapping[str, Sequence[int]],
    resamples: int,
    confidence: float,
    method: str,
    seed: int,
) -> tuple[pd.DataFrame, dict[str, dict[str, dict[str, float | int]]]]:
    """App. C localisation of each ranking (``RANKINGS`` order, those given) over the questions all of
    them explain, live positions only. Returns the per-question table (column ``ranking``) and, per
    ranking and region, :func:`localisation_summary` (with ``base_rate_rank_1``)."""
    common = set.intersection(*(set(map(str, f["record_id"])) for f in rankings.values()))
    tables, summary = [], {}
    for name in [n for n in RANKINGS if n in rankings] + [n for n in rankings if n not in RANKINGS]:
        frame = rankings[name]
        kept = frame[frame["record_id"].astype(str).isin(common)]
        table = localisation_table(kept, prompts, live)
        summary[name] = localisation_summary(table, resamples, confidence, method, seed)
        tables.append(table.assign(ranking=name))
    return pd.concat(tables, ignore_index=True), summary
