"""The correction of Eq. 5, the corrected width of Eq. 6 and the correction statistics of Sec. 5.3.

From intermediate values m~ (..., 14) (``conversion.py``), for the non-empty proper subsets S:

    q_S = max(0, m~_S),   s = Σ_S q_S,   r = max(1 - s, 0)                               (Eq. 5)
    m_S = q_S / (s + r),  m_Θ = r / (s + r)          (s + r = max(s, 1) ≥ 1, never zero)

and for an answer c, with u_c = Σ_{S⊊Θ, c∈S, |S|>1} q_S,

    W_c = (u_c + r) / (s + r)                                                          (Eq. 6)

At the kinks (m~_S = 0, s = 1) autograd follows ``torch.relu``: an exactly-zero value has zero
derivative, so at s = 1 the rescaling branch (r held at 0) is differentiated (App. A).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from xurs_pipeline.credal.conversion import intermediate_in_compute_dtype
from xurs_pipeline.credal.focal_sets import N_BELIEFS, focal_tensors
from xurs_pipeline.credal.validation import check_beliefs

RESCALE_THRESHOLD = 1e-6  # rescaling counts as active when s > 1 + 1e-6 (Sec. 5.3)


@dataclass(frozen=True)
class CorrectionStats:
    """What the correction did, per prediction (float fields in the dtype of the beliefs).

    intermediate:     (..., 14) m~, the recursion's output before correction (App. A).
    q:                (..., 14) max(0, m~) (Eq. 5).
    s:                (...)     Σ q (Eq. 5).
    r:                (...)     max(1 - s, 0), the shortfall given to Θ (Eq. 5).
    rescaled:         (...)     bool, s > 1 + 1e-6 (Sec. 5.3).
    n_negative:       (...)     int64, number of negative intermediate values.
    total_adjustment: (...)     Σ over the 15 sets of |m_S - m~_S|, with m~_Θ = 0 (Sec. 5.3).
    masses:           (..., 15) the corrected masses (Eq. 5), as ``beliefs_to_masses`` returns them.
    """

    intermediate: torch.Tensor
    q: torch.Tensor
    s: torch.Tensor
    r: torch.Tensor
    rescaled: torch.Tensor
    n_negative: torch.Tensor
    total_adjustment: torch.Tensor
    masses: torch.Tensor


@dataclass(frozen=True)
class _Corrected:
    q: torch.Tensor  # (..., 14)
    s: torch.Tensor  # (...)
    r: torch.Tensor  # (...)
    masses: torch.Tensor  # (..., 15)


def _correct(intermediate: torch.Tensor) -> _Corrected:
    """Eq. 5 applied to m~ (..., 14), in m~'s dtype."""
    q = torch.relu(intermediate)
    s = q.sum(dim=-1)
    r = torch.relu(1 - s)
    masses = torch.cat([q, r.unsqueeze(-1)], dim=-1) / (s + r).unsqueeze(-1)
    return _Corrected(q=q, s=s, r=r, masses=masses)


def _corrected(b: torch.Tensor, conversion: str, validate: bool) -> tuple[torch.Tensor, _Corrected]:
    check_beliefs(b, validate=validate)
    intermediate = intermediate_in_compute_dtype(b, conversion)
    return intermediate, _correct(intermediate)


def beliefs_to_masses(
    b: torch.Tensor, conversion: str = "positive_part", *, validate: bool = True
) -> torch.Tensor:
    """Masses (..., 15) in ``FOCAL_SETS`` order from beliefs b (..., 14): App. A conversion, then Eq. 5.

    ``conversion``: ``"positive_part"`` (the paper's recursion) or ``"mobius"`` (exact inversion).
    """
    _, corrected = _corrected(b, conversion, validate)
    return corrected.masses.to(b.dtype)


def correction_stats(
    b: torch.Tensor, conversion: str = "positive_part", *, validate: bool = True
) -> CorrectionStats:
    """Correction statistics (Sec. 5.3) for beliefs b (..., 14); see :class:`CorrectionStats`."""
    intermediate, c = _corrected(b, conversion, validate)
    adjustment = (c.masses[..., :N_BELIEFS] - intermediate).abs().sum(dim=-1) + c.masses[..., N_BELIEFS].abs()
    return CorrectionStats(
        intermediate=intermediate.to(b.dtype),
        q=c.q.to(b.dtype),
        s=c.s.to(b.dtype),
        r=c.r.to(b.dtype),
        rescaled=c.s > 1 + RESCALE_THRESHOLD,
        n_negative=(intermediate < 0).sum(dim=-1),
        total_adjustment=adjustment.to(b.dtype),
        masses=c.masses.to(b.dtype),
    )


def closed_form_width(
    b: torch.Tensor, conversion: str = "positive_part", *, validate: bool = True
) -> torch.Tensor:
    """Corrected width W_c = (u_c + r) / (s + r) (Eq. 6) for the 4 options, (..., 4) from b (..., 14).

    Equal to ``credal_width(beliefs_to_masses(b))`` (Eq. 2); kept as an independent cross-check.
    """
    _, c = _corrected(b, conversion, validate)
    proper_pairs_triples = focal_tensors(c.q.device, c.q.dtype).width_membership[:N_BELIEFS]  # (14, 4)
    u = c.q @ proper_pairs_triples  # (..., 4)
    return ((u + c.r.unsqueeze(-1)) / (c.s + c.r).unsqueeze(-1)).to(b.dtype)
