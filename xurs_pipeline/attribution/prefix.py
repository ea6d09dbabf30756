"""The prompt prefix every reference of a plan shares with X, run once (``attribution.reuse_prefix``).

Z_s = B_s + α_s (X - B_s) equals X exactly wherever B_s equals X. If every reference drawn in a plan
equals X on positions [0, p) (the aligned paired reference of Sec. 5.4 differs only around the clue;
training references may share a template), then every sample's first p positions are X's, so a causal
model's states there are the same for all samples, and (X - B_s) = 0 there, so those rows'
attributions are exactly 0. The engine then runs the model on X[:, :p] once (batch 1, no gradient),
keeps its key/value cache (``PrefixReuse.prefix_cache``) and runs each batch on [p, L) only.

The prefix pass and the per-batch copies of its cache cost a little, so the prefix is reused only when
p >= ``MIN_TOKENS`` and p >= ``MIN_FRACTION`` x L (bench/bench_gradients.py, paired-reference section).
The suffix always keeps the prompt's last real token (the one the classifier reads).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import torch

from xurs_pipeline.attribution.model import PrefixReuse, Prompt, WidthModel
from xurs_pipeline.attribution.references import PreparedReferences

log = logging.getLogger("xurs")

MIN_TOKENS = 8
MIN_FRACTION = 0.1


@dataclass(frozen=True)
class SharedPrefix:
    """p = ``length`` positions shared by X and every reference of a plan; ``cache``: the model's state
    after X[:, :p] (batch 1), passed back to ``PrefixReuse.forward_after_prefix``."""

    length: int
    cache: Any


def shared_length(
    model: WidthModel,
    prompt: Prompt,
    refs: PreparedReferences,
    ref_index: torch.Tensor,
    minimum: int = 1,
) -> int:
    """First position where a prepared reference drawn in ``ref_index`` (n,), or the end of its path,
    differs from X (exact equality of embeddings), at most the position of X's last real token. Stops
    looking once the answer is below ``minimum``."""
    x = prompt.embeds[0]  # (L, d)
    length = int(prompt.attention_mask[0].nonzero().max())
    for r in torch.unique(ref_index).tolist():
        if length < minimum:
            break
        index = torch.tensor([r], device=x.device)
        base = refs.embeds(model.embed, index, prompt.embeds)[0]  # (L, d)
        differs = base[:length] != x[:length]
        if refs.end_ids is not None:  # a piece of a block path ends before X (attribution/paths.py)
            differs |= refs.ends(model.embed, index, prompt.embeds)[0, :length] != x[:length]
        differs = differs.any(dim=-1).nonzero()
        if differs.numel():
            length = int(differs[0])
    return length


def shared_prefix(
    model: WidthModel, prompt: Prompt, refs: PreparedReferences, ref_index: torch.Tensor
) -> SharedPrefix | None:
    """The shared prefix of a plan with its cache, or None where the full-length path is used: the
    model lacks ``PrefixReuse`` or declines (``prefix_cache`` returns None), or p is below the minimum."""
    if not isinstance(model, PrefixReuse):
        return None
    minimum = max(MIN_TOKENS, math.ceil(MIN_FRACTION * prompt.length))
    length = shared_length(model, prompt, refs, ref_index, minimum)
    if length < minimum:
        return None
    with torch.no_grad():
        cache = model.prefix_cache(
            prompt.embeds[:, :length], prompt.attention_mask[:, :length], prompt.position_ids[:, :length]
        )
    if cache is None:
        return None
    log.debug("attribution: reusing the first %d of %d prompt positions", length, prompt.length)
    return SharedPrefix(length, cache)


def path_rows(
    model: WidthModel,
    prompt: Prompt,
    refs: PreparedReferences,
    idx: torch.Tensor,
    prefix: SharedPrefix | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows [p, L) of the straight paths of references ``idx`` (b,): (B (b, L - p, d), X - B (b, L - p, d)) in
    the model's dtype, X each path's end (the prompt, or a piece's end); p = 0 without a prefix."""
    p = prefix.length if prefix else 0
    with torch.no_grad():
        x = refs.ends(model.embed, idx, prompt.embeds)[:, p:]  # (1 or b, L - p, d)
        base = refs.embeds(model.embed, idx, prompt.embeds)[:, p:]  # (b, L - p, d)
        return base, x - base


def masses_on_path(
    model: WidthModel, prompt: Prompt, z: torch.Tensor, prefix: SharedPrefix | None
) -> torch.Tensor:
    """The masses (b, 15) of path points Z (b, L - p, d) under the prompt's full-length mask: the whole
    forward, or its continuation after the cached prefix (p = 0 without one)."""
    p = prefix.length if prefix else 0
    mask = prompt.attention_mask.expand(z.shape[0], -1)  # (b, L): the prefix stays attended to
    positions = prompt.position_ids[:, p:].expand(z.shape[0], -1)  # (b, L - p)
    if prefix is None:
        return model(z, mask, positions).masses
    out = model.forward_after_prefix(prefix.cache, z, mask, positions)  # type: ignore[attr-defined]
    masses: torch.Tensor = out.masses
    return masses
