"""Null rankings for clue localisation (App. C): what a localisation figure would be without the model.

A clue study's localisation (the clue's best token ranks first, its share of the region's magnitude)
means something only when it beats what needs no trained model:

- the input-only ranking: per position, how far the input's token embedding is from the references'
  as prepared for attribution (aligned or not), ``s_l = sum_m ||E[x_l] - E[x'_{m,l}]||_2``, E the
  backbone's input embedding matrix. It reads the prompt, the references and E, never a weight past the
  embedding, so whatever it finds, the alignment and the vocabulary found;
- the live positions: only where the input differs from at least one reference can an attribution along
  the straight path (Eq. 3) be non-zero, ``(x - x') * grad`` vanishes elsewhere (``identical_positions``
  in ``localisation.py`` is the same test on embeddings);
- the base rate: the expected share of questions whose best clue token ranks first under random
  (exchangeable, tie-free) scores over the live positions of the region, per question
  ``|clue & live| / |region & live|``, averaged over questions.

Everything here is numpy on token ids; ``prepared_ids=None`` stands for the zero-embedding baseline
(every position differs from it unless its embedding is zero).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def _check(input_ids: np.ndarray, prepared_ids: np.ndarray | None) -> np.ndarray | None:
    if input_ids.ndim != 1:
        raise ValueError(f"input_ids must be (seq,), got shape {input_ids.shape}")
    if prepared_ids is None:
        return None
    refs = np.asarray(prepared_ids, dtype=np.int64)
    if refs.ndim != 2 or refs.shape[1] != input_ids.shape[0] or refs.shape[0] == 0:
        raise ValueError(
            f"prepared_ids {refs.shape} must be (n_refs >= 1, {input_ids.shape[0]}): each reference as "
            "prepared for attribution, at the input's positions"
        )
    return refs


def input_only_scores(
    input_ids: Sequence[int] | np.ndarray,
    prepared_ids: np.ndarray | None,
    embedding: np.ndarray,
) -> np.ndarray:
    """``s_l = sum_m ||E[x_l] - E[x'_{m,l}]||_2`` per position, float64 (seq,).

    input_ids (seq,); prepared_ids (n_refs, seq) or None (zero baseline: ``s_l = ||E[x_l]||``);
    embedding E (vocab, hidden).
    """
    x = np.asarray(input_ids, dtype=np.int64)
    refs = _check(x, prepared_ids)
    table = np.asarray(embedding, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"embedding must be (vocab, hidden), got shape {table.shape}")
    used = x if refs is None else np.concatenate([x, refs.ravel()])
    if used.size and (used.min() < 0 or used.max() >= table.shape[0]):
        raise ValueError(f"token ids must lie in [0, {table.shape[0]}) (the embedding's vocabulary)")
    ex = table[x]  # (seq, hidden)
    if refs is None:
        return np.linalg.norm(ex, axis=-1)
    return np.linalg.norm(ex[None] - table[refs], axis=-1).sum(axis=0)  # (n_refs, seq) -> (seq,)


def live_positions(
    input_ids: Sequence[int] | np.ndarray,
    prepared_ids: np.ndarray | None,
    embedding: np.ndarray | None = None,
) -> tuple[int, ...]:
    """Positions that can take attribution: the input differs from at least one reference there.

    input_ids (seq,); prepared_ids (n_refs, seq) or None (zero baseline); with ``embedding`` (vocab,
    hidden) two ids count as equal when their embedding rows are (tied rows), else ids are compared.
    """
    x = np.asarray(input_ids, dtype=np.int64)
    refs = _check(x, prepared_ids)
    if embedding is not None:
        return tuple(int(i) for i in np.flatnonzero(input_only_scores(x, refs, embedding) > 0))
    if refs is None:
        return tuple(range(x.size))
    return tuple(int(i) for i in np.flatnonzero((refs != x[None]).any(axis=0)))


def chance_rank_1(region: Iterable[int], clue: Iterable[int], live: Iterable[int]) -> float:
    """Probability that a clue token ranks first in ``region`` under random scores on the live positions
    (dead positions score 0 and rank last): ``|clue & live| / |region & live|``. NaN when no region
    position is live."""
    live_set = set(int(i) for i in live)
    region_live = set(int(i) for i in region) & live_set
    clue_set = set(int(i) for i in clue)
    if not clue_set <= set(int(i) for i in region):
        raise ValueError(f"clue positions {sorted(clue_set - set(region))} are not in the region")
    if not region_live:
        return float("nan")
    return len(clue_set & region_live) / len(region_live)


def base_rate(questions: Iterable[tuple[Iterable[int], Iterable[int], Iterable[int]]]) -> float:
    """Expected share of questions whose best clue token ranks first under random scores: the mean of
    :func:`chance_rank_1` over ``(region, clue, live)`` per question (questions with no live region
    position are left out). NaN for no question."""
    rates = [chance_rank_1(region, clue, live) for region, clue, live in questions]
    rates = [r for r in rates if not np.isnan(r)]
    return float(np.mean(rates)) if rates else float("nan")
