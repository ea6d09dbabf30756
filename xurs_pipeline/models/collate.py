"""Pad variable-length token-id lists (or per-token state tensors) into a batch."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def pad_batch(
    input_ids: Sequence[Sequence[int]], pad_token_id: int, padding_side: str = "left"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lists of token ids -> (ids (batch, seq) long, attention_mask (batch, seq) long), seq = longest.

    ``padding_side`` ``"left"`` puts the padding before the tokens, ``"right"`` after them.
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side={padding_side!r}: must be 'left' or 'right'")
    if not input_ids:
        raise ValueError("pad_batch: empty batch")
    lengths = [len(ids) for ids in input_ids]
    if min(lengths) == 0:
        raise ValueError(f"pad_batch: sequence {lengths.index(0)} of the batch has no tokens")
    seq = max(lengths)
    ids = torch.full((len(input_ids), seq), pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(input_ids), seq), dtype=torch.long)
    for row, tokens in enumerate(input_ids):
        cols = slice(seq - len(tokens), seq) if padding_side == "left" else slice(0, len(tokens))
        ids[row, cols] = torch.as_tensor(list(tokens), dtype=torch.long)
        mask[row, cols] = 1
    return ids, mask


def pad_states(
    states: Sequence[torch.Tensor], padding_side: str = "left"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-prompt hidden states (L_i, d) -> (states (batch, seq, d) zero-padded, attention_mask (batch, seq)
    long), seq = longest; padding on ``padding_side`` as :func:`pad_batch` pads token ids."""
    ids, mask = pad_batch([range(s.shape[0]) for s in states], 0, padding_side)
    out = states[0].new_zeros((len(states), ids.shape[1], states[0].shape[1]))
    out[mask.bool()] = torch.cat(list(states))
    return out, mask
