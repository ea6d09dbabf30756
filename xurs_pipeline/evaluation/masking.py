"""Zero-masking (Eq. 8, Sec. 5.2) and its top-k extension.

``R_i X`` sets token i's embedding row to zero; sequence length, attention mask and positions stay those
of the original prompt. ``D_i = |F(R_i X) - F(X)|`` with ``F`` a target function of the masses evaluated
for the answer ``c`` selected on the original prompt (fixed throughout). ``i*`` is the highest-ranked
eligible token; the controls are ``n_random`` eligible positions drawn uniformly with replacement (``i*``
may be drawn), and ``A(x) = D_{i*} - mean_b D_{j_b}``.

Beyond the paper, the top-k curve masks the k highest-ranked eligible tokens together against ``n_random``
random eligible k-sets. Each control row is a random ordering of distinct eligible positions and its
k-set is the row's first k entries, so for k = 1 the controls are exactly Eq. 8's draws. Eq. 8 needs one
eligible token; a question with fewer eligible tokens than ``k_max`` has a curve that stops at its count.

The model is any :data:`MassFn` (``inputs_embeds, attention_mask, position_ids -> masses``), so the
functions here run on analytic test models as well as on a ``RandomSetClassifier``.

Shared prefix (``evaluation.mask_reuse_prefix``): ``attribution/masked.py`` runs the unmasked prompt once
into its key/value cache and each batch of variants only from its first masked position on.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from xurs_pipeline.attribution.masked import MassFn, masked_masses
from xurs_pipeline.attribution.targets import get_target
from xurs_pipeline.errors import XursError


class InsufficientEligibleError(XursError, ValueError):
    """A question has fewer eligible tokens than the masking protocol needs."""


@dataclass(frozen=True)
class MaskingSpec:
    n_random: int = 20
    k_max: int = 10
    seed: int = 0
    batch_size: int = 16
    reuse_prefix: bool = True


@dataclass(frozen=True)
class MaskingQuestion:
    """One explained question: embeddings (seq, hidden), mask (seq,), positions (seq,), eligible (seq,)."""

    record_id: str
    embeds: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    eligible: np.ndarray
    c: int


@dataclass(frozen=True)
class MaskingEffect:
    """Zero-masking result of one question and one target function.

    top_positions (k,), random_positions (n_random, k), top_delta (k,) and random_delta (n_random, k),
    k = min(k_max, eligible tokens): entry [.., k-1] masks k tokens together.
    """

    record_id: str
    target: str
    c: int
    f_x: float
    top_positions: np.ndarray
    random_positions: np.ndarray
    top_delta: np.ndarray
    random_delta: np.ndarray

    @property
    def random_mean(self) -> np.ndarray:
        """mean_b D_{j_b} for each k, (k,)."""
        return self.random_delta.mean(axis=0)

    @property
    def advantage(self) -> np.ndarray:
        """A_k(x) = D_top-k - mean_b D_random-k for k = 1..k, (k,); entry 0 is Eq. 8's A(x)."""
        return self.top_delta - self.random_mean


def question_rng(seed: int, record_id: str) -> np.random.Generator:
    """A generator that depends only on (seed, record_id): reproducible whatever the question order/shard."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(record_id.encode())]))


def eligible_positions(eligible: np.ndarray, record_id: str) -> np.ndarray:
    """Indices of eligible tokens (n_eligible,); raises if there is none (Eq. 8 masks one)."""
    positions = np.flatnonzero(np.asarray(eligible, dtype=bool))
    if positions.size == 0:
        raise InsufficientEligibleError(
            f"record {record_id!r}: no eligible token to zero-mask (Sec. 5.2 eligibility: see the "
            "prepared prompt's sections)"
        )
    return positions


def top_eligible(magnitude: np.ndarray, eligible: np.ndarray, k_max: int, record_id: str) -> np.ndarray:
    """The k_max highest-magnitude eligible positions, best first (ties: lower position first),
    (min(k_max, n_eligible),)."""
    magnitude = np.asarray(magnitude, dtype=np.float64)
    if magnitude.shape != np.shape(eligible):
        raise ValueError(
            f"record {record_id!r}: token magnitudes have shape {magnitude.shape}, "
            f"eligibility {np.shape(eligible)}"
        )
    if not np.all(np.isfinite(magnitude)):
        raise ValueError(f"record {record_id!r}: token magnitudes contain NaN or inf")
    positions = eligible_positions(eligible, record_id)
    order = np.argsort(-magnitude[positions], kind="stable")
    return positions[order[:k_max]]


def draw_random_sets(
    positions: np.ndarray, n_random: int, k_max: int, rng: np.random.Generator
) -> np.ndarray:
    """(n_random, k_max): each row k_max distinct eligible positions in uniformly random order.

    Column 0 is n_random uniform draws with replacement (Eq. 8); row[:k] is a uniform random k-subset.
    """
    return np.stack([rng.choice(positions, size=k_max, replace=False) for _ in range(n_random)])


def zero_masking_effects(
    mass_fn: MassFn,
    question: MaskingQuestion,
    rankings: Mapping[str, np.ndarray],
    spec: MaskingSpec,
    target_fn: str | None = None,
) -> list[MaskingEffect]:
    """Eq. 8 and the top-k curve for each target in ``rankings`` (target name -> token magnitudes (seq,));
    with ``target_fn`` the names are labels only (e.g. attribution methods) and every ranking is scored on
    that one target function.

    The random control sets are drawn once per question and shared by all targets; each target's top
    sets come from its own ranking and its D values from its own function of the masses.
    """
    positions = eligible_positions(question.eligible, question.record_id)
    k_max = min(spec.k_max, positions.size)  # the curve stops at the number of eligible tokens
    rng = question_rng(spec.seed, question.record_id)
    random_sets = draw_random_sets(positions, spec.n_random, k_max, rng)
    tops = {
        name: top_eligible(mag, question.eligible, k_max, question.record_id)
        for name, mag in rankings.items()
    }
    ks = range(1, k_max + 1)
    random_list = [list(row[:k]) for row in random_sets for k in ks]
    top_list = [list(top[:k]) for top in tops.values() for k in ks]
    masses = masked_masses(
        mass_fn, question, [[], *random_list, *top_list], spec.batch_size, spec.reuse_prefix
    )
    n_rand = len(random_list)
    c = torch.full((masses.shape[0],), question.c, dtype=torch.long, device=masses.device)
    effects = []
    for t, (name, top) in enumerate(tops.items()):
        # (1 + n_rand + n_targets * k_max,)
        values = get_target(target_fn or name)(masses, c).double().cpu().numpy()
        f_x = values[0]
        random_delta = np.abs(values[1 : 1 + n_rand] - f_x).reshape(spec.n_random, k_max)
        lo = 1 + n_rand + t * k_max
        top_delta = np.abs(values[lo : lo + k_max] - f_x)
        effects.append(
            MaskingEffect(
                question.record_id, name, question.c, float(f_x), top, random_sets, top_delta, random_delta
            )
        )
    return effects
