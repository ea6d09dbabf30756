"""Masses of a prompt with sets of embedding rows replaced (zeroed by default), batched: what zero-masking
(Eq. 8, ``evaluation/masking.py``) and occlusion (``attribution/methods/``) evaluate.

The model is any :data:`MassFn` (``inputs_embeds, attention_mask, position_ids -> masses``), so the
functions here run on analytic test models as well as on a ``RandomSetClassifier``.

Shared prefix (``evaluation.mask_reuse_prefix``, ``attribution.reuse_prefix``): zeroing the rows of a set
whose first position is m leaves positions [0, m) unchanged, so a causal model's keys and values there are
the unmasked prompt's. A :class:`PrefixMassFn` (``classifier_mass_fn`` of a ``RandomSetClassifier``,
through its ``prefix_cache`` / ``forward_after_prefix``, the same route as ``attribution/prefix.py``) runs the
unmasked prompt once into its key/value cache, and each batch of variants only from the smallest first
masked position of the batch on. Variants are sorted by that position, so a batch shares a long prefix,
and a batch holds up to ``batch_size`` variants. Results equal the full-length path to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from xurs_pipeline.attribution.prefix import MIN_TOKENS


class MassFn(Protocol):
    def __call__(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> torch.Tensor:
        """(batch, seq, hidden), (batch, seq), (batch, seq) -> masses (batch, 15)."""
        ...


@runtime_checkable
class PrefixMassFn(Protocol):
    """A :data:`MassFn` that can also continue from the unmasked prompt's cache (module docstring)."""

    def __call__(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> torch.Tensor: ...

    def prompt_cache(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> Any:
        """(1, L, d), (1, L), (1, L) -> an opaque cache of the whole prompt, or None if unsupported."""
        ...

    def after_prefix(
        self,
        cache: Any,
        prefix: int,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
    ) -> torch.Tensor:
        """Masses (b, 15) of prompts equal to the cached one on [0, prefix): inputs_embeds
        (b, L - prefix, d), attention_mask (b, L), position_ids (b, L - prefix)."""
        ...


@dataclass(frozen=True)
class ClassifierMasses:
    """:class:`PrefixMassFn` of a classifier whose ``forward(inputs_embeds, attention_mask, position_ids)``
    returns an output with ``.masses (batch, 15)`` (the ``RandomSetClassifier`` contract); the prefix
    methods use its ``prefix_cache`` / ``forward_after_prefix`` where it has them."""

    model: Any

    def __call__(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> torch.Tensor:
        return self.model(
            inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids
        ).masses

    def prompt_cache(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> Any:
        if not hasattr(self.model, "prefix_cache"):
            return None
        return self.model.prefix_cache(inputs_embeds, attention_mask, position_ids)

    def after_prefix(
        self,
        cache: Any,
        prefix: int,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
    ) -> torch.Tensor:
        # keys/values (1, kv_heads, L, head_dim) of a causal model: the first `prefix` positions are
        # those of the prompt's first `prefix` tokens alone.
        head = tuple((keys[:, :, :prefix], values[:, :, :prefix]) for keys, values in cache)
        return self.model.forward_after_prefix(head, inputs_embeds, attention_mask, position_ids).masses


def classifier_mass_fn(model: Any) -> ClassifierMasses:
    """The :class:`PrefixMassFn` of a classifier (see :class:`ClassifierMasses`)."""
    return ClassifierMasses(model)


class MaskedPrompt(Protocol):
    """A prompt to mask: embeds (seq, hidden), attention_mask (seq,), position_ids (seq,)."""

    embeds: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor


@torch.inference_mode()
def masked_masses(
    mass_fn: MassFn,
    question: MaskedPrompt,
    position_sets: Sequence[Sequence[int]],
    batch_size: int,
    reuse_prefix: bool = True,
    replacement: torch.Tensor | None = None,
) -> torch.Tensor:
    """Masses (n_sets, 15), float64, after zeroing the embedding rows of each set (the empty set gives F(X)),
    or setting them to ``replacement``'s rows (seq, hidden) where given (occlusion's other replacements).

    Full-length path: ``batch_size`` masked copies of the prompt per forward pass, on the embeddings'
    device. With ``reuse_prefix`` and a :class:`PrefixMassFn` that returns a cache, the shared-prefix
    path of the module docstring (same results to rounding).
    """
    fill = torch.zeros_like(question.embeds) if replacement is None else replacement
    cache = None
    if reuse_prefix and isinstance(mass_fn, PrefixMassFn):
        cache = mass_fn.prompt_cache(
            question.embeds[None], question.attention_mask[None], question.position_ids[None]
        )
    if cache is None:
        chunks = [
            list(range(i, min(i + batch_size, len(position_sets))))
            for i in range(0, len(position_sets), batch_size)
        ]
        return _run_chunks(mass_fn, question, position_sets, [(c, 0) for c in chunks], None, fill)
    chunks = prefix_chunks(question, position_sets, batch_size)
    return _run_chunks(mass_fn, question, position_sets, chunks, cache, fill)


def prefix_chunks(
    question: MaskedPrompt, position_sets: Sequence[Sequence[int]], batch_size: int
) -> list[tuple[list[int], int]]:
    """Batches of set indices with the prefix p each shares: sets sorted by their first masked position
    (longest prefix first), at most ``batch_size`` sets (and ``batch_size`` x L suffix tokens) per batch;
    p is the batch's smallest first position, at most the prompt's last real token (kept in every
    suffix), and 0 below ``MIN_TOKENS`` (then the batch runs full length)."""
    length = question.embeds.shape[0]
    last = int(question.attention_mask.nonzero().max())
    starts = np.array([min([last, *map(int, s)]) for s in position_sets], dtype=np.int64)
    order = np.argsort(-starts, kind="stable")
    chunks: list[tuple[list[int], int]] = []
    current: list[int] = []
    for i in order.tolist():
        full = len(current) == batch_size or (len(current) + 1) * (length - starts[i]) > batch_size * length
        if current and full:
            chunks.append((current, int(starts[current[-1]])))
            current = []
        current.append(i)
    if current:
        chunks.append((current, int(starts[current[-1]])))
    return [(c, p if p >= MIN_TOKENS else 0) for c, p in chunks]


def _run_chunks(
    mass_fn: MassFn,
    question: MaskedPrompt,
    position_sets: Sequence[Sequence[int]],
    chunks: Sequence[tuple[list[int], int]],
    cache: Any,
    fill: torch.Tensor,
) -> torch.Tensor:
    """Masses (n_sets, 15) float64 of every (indices, prefix) batch, each set's rows taken from ``fill``
    (seq, hidden); prefix 0 runs full length."""
    embeds = question.embeds
    seq = embeds.shape[0]
    out = torch.empty((len(position_sets), 15), dtype=torch.float64, device=embeds.device)
    for chunk, p in chunks:
        batch = _filled(embeds, fill, [position_sets[i] for i in chunk], p)
        mask = question.attention_mask.reshape(1, seq).expand(len(chunk), seq)
        pos = question.position_ids[p:].reshape(1, seq - p).expand(len(chunk), seq - p)
        masses = (
            mass_fn.after_prefix(cache, p, batch, mask, pos)  # type: ignore[attr-defined]
            if p
            else mass_fn(batch, mask, pos)
        )
        out[torch.tensor(chunk, device=out.device)] = masses.double()
    return out


def _filled(embeds: torch.Tensor, fill: torch.Tensor, sets: Sequence[Sequence[int]], p: int) -> torch.Tensor:
    """Copies of the prompt's rows from position ``p`` on, one a set, each set's rows taken from ``fill``:
    (len(sets), seq - p, hidden), one ``torch.where`` over a boolean mask built in numpy (row-by-row tensor
    assignment cost seconds for a few thousand sets)."""
    chosen = np.zeros((len(sets), embeds.shape[0] - p), dtype=bool)
    for row, positions in enumerate(sets):
        chosen[row, np.asarray(positions, dtype=np.int64) - p] = True
    where = torch.from_numpy(chosen).to(embeds.device)[..., None]
    return torch.where(where, fill[p:], embeds[p:])
