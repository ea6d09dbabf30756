"""A gradient method's coordinates (L, d) reduced over the hidden dimension to one magnitude per token
(``attribution.reduction``, resolved by ``AttributionConfig.token_reduction``):

- ``l2``: ``||e_i||_2``, the paper's token magnitude (``records.TargetAttribution``) and ``grad_l2``'s;
- ``abs_sum``: ``|sum_h e_ih|``, the absolute value of the token's share of completeness (Eq. 9),
  ``grad_x_input``'s, ``layer_ig``'s and ``sequential_ig``'s.
"""

from __future__ import annotations

import torch


def reduce_tokens(coords: torch.Tensor, reduction: str) -> torch.Tensor:
    """coords (L, d) -> magnitudes (L,) by ``reduction`` (``l2`` or ``abs_sum``)."""
    magnitudes: torch.Tensor
    if reduction == "l2":
        magnitudes = coords.norm(dim=-1)
        return magnitudes
    if reduction == "abs_sum":
        magnitudes = coords.sum(-1).abs()
        return magnitudes
    raise ValueError(f"attribution.reduction={reduction!r}: must be 'l2' or 'abs_sum' once resolved")
