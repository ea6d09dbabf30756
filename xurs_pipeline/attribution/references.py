"""Reference preparation (Sec. 3.3, 5.4): training prompts, zero baseline, aligned paired prompt.

A prepared reference is a sequence of L token ids (or the zero embedding) evaluated under the
original prompt's attention mask and positions. Training prompts are truncated or right-padded to L
(or, with ``attribution.reference_alignment='sequence'``, aligned as the paired prompt is).
The aligned paired reference places text shared with the original prompt at the original positions
(``difflib.SequenceMatcher`` on token ids) and pads everything unmatched. Which training prompts form
the collections is decided by ``xurs_pipeline.data.references.reference_collections``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

ZERO_REFERENCE_ID = "<zero>"

Embedding = Callable[[torch.Tensor], torch.Tensor]  # token ids (b, L) -> embeddings (b, L, d)


def pad_or_truncate(ids: Sequence[int], length: int, pad_id: int) -> list[int]:
    """Keep the first ``length`` ids; right-pad shorter sequences with ``pad_id`` (Sec. 3.3)."""
    if length < 1:
        raise ValueError(f"length={length}: must be positive")
    return list(ids[:length]) + [pad_id] * max(0, length - len(ids))


@dataclass(frozen=True)
class AlignedReference:
    """A paired prompt aligned to the original (Sec. 5.4).

    prepared_ids: L ids; shared text sits at the original positions, unmatched positions hold padding
      or the reference's own tokens fitted into a replaced span (surplus tokens are omitted).
    changed_positions: positions whose prepared id differs from the original id (the only positions
      that can receive attribution: elsewhere input and reference embeddings are identical).
    padded_positions: positions filled with padding by the alignment.
    """

    prepared_ids: tuple[int, ...]
    changed_positions: tuple[int, ...]
    padded_positions: tuple[int, ...]


def align_paired(original: Sequence[int], reference: Sequence[int], pad_id: int) -> AlignedReference:
    """Align ``reference`` token ids to ``original`` (length L) by longest matching blocks."""
    matcher = difflib.SequenceMatcher(a=list(original), b=list(reference), autojunk=False)
    prepared: list[int] = [pad_id] * len(original)
    padded: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            prepared[i1:i2] = reference[j1:j2]
        elif tag == "replace":  # fit the reference's tokens into the span, pad the rest
            kept = list(reference[j1 : min(j2, j1 + i2 - i1)])
            prepared[i1 : i1 + len(kept)] = kept
            padded.extend(range(i1 + len(kept), i2))
        elif tag == "delete":  # original tokens with no counterpart (e.g. the inserted test result)
            padded.extend(range(i1, i2))
        # "insert": reference tokens with no place in the original are omitted
    changed = tuple(i for i, (a, b) in enumerate(zip(original, prepared, strict=True)) if a != b)
    return AlignedReference(tuple(prepared), changed, tuple(padded))


@dataclass
class PreparedReferences:
    """One collection of M references prepared for one question of length L.

    record_ids: M reference ids (``<zero>`` for the zero baseline).
    natural_ids: M token-id lists as normally processed (None for the zero baseline).
    prepared_ids: (M, L) long tensor on the model's device, or None for the zero baseline.
    changed_positions: per reference, positions where the prepared id differs from the original.
    end_ids: (M, L) long tensor where each path ends, or None: every path ends at the prompt X (the straight
      path B -> X of Eq. 3 and 5). Set only for the pieces of a piecewise path (``attribution/paths.py``).
    """

    record_ids: tuple[str, ...]
    natural_ids: list[list[int]] | None
    prepared_ids: torch.Tensor | None
    changed_positions: list[tuple[int, ...]]
    end_ids: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.record_ids)

    def embeds(self, embed: Embedding, index: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """Prepared embeddings B of references ``index`` (b,) -> (b, L, d) in the dtype/device of ``like``."""
        if self.prepared_ids is None:
            return torch.zeros((index.numel(), *like.shape[1:]), dtype=like.dtype, device=like.device)
        return embed(self.prepared_ids.index_select(0, index)).to(like.dtype)

    def ends(self, embed: Embedding, index: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """Where the paths of references ``index`` (b,) end: X itself (``like``, (1, L, d)) or (b, L, d)."""
        if self.end_ids is None:
            return like
        return embed(self.end_ids.index_select(0, index)).to(like.dtype)


def _changed(original: Sequence[int], prepared: Sequence[int]) -> tuple[int, ...]:
    return tuple(i for i, (a, b) in enumerate(zip(original, prepared, strict=True)) if a != b)


def prepare_training(
    original: Sequence[int],
    refs: Sequence[Sequence[int]],
    ref_ids: Sequence[str],
    pad_id: int,
    device: torch.device,
    alignment: str = "position",
) -> PreparedReferences:
    """Training prompts fitted to the question's length L: ``position``, truncated / right-padded (Sec. 3.3);
    ``sequence``, aligned as the paired prompt is (:func:`align_paired`, Sec. 5.4), shared text in place."""
    length = len(original)
    if alignment == "position":
        prepared = [pad_or_truncate(ids, length, pad_id) for ids in refs]
    elif alignment == "sequence":
        prepared = [list(align_paired(original, ids, pad_id).prepared_ids) for ids in refs]
    else:
        raise ValueError(f"alignment={alignment!r}: must be 'position' or 'sequence'")
    return PreparedReferences(
        record_ids=tuple(ref_ids),
        natural_ids=[list(ids) for ids in refs],
        prepared_ids=torch.tensor(prepared, dtype=torch.long, device=device),
        changed_positions=[_changed(original, p) for p in prepared],
    )


def prepare_zero(original: Sequence[int]) -> PreparedReferences:
    """The zero-embedding baseline: every position changes unless the input embedding is zero."""
    return PreparedReferences((ZERO_REFERENCE_ID,), None, None, [tuple(range(len(original)))])


def prepare_aligned(
    original: Sequence[int], paired: Sequence[int], paired_id: str, pad_id: int, device: torch.device
) -> PreparedReferences:
    """The paired prompt aligned to the original (Sec. 5.4)."""
    aligned = align_paired(original, paired, pad_id)
    return PreparedReferences(
        record_ids=(paired_id,),
        natural_ids=[list(paired)],
        prepared_ids=torch.tensor([aligned.prepared_ids], dtype=torch.long, device=device),
        changed_positions=[aligned.changed_positions],
    )
