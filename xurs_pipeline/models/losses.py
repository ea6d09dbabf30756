"""Training losses (Sec. 5.1, App. B.1), computed on the corrected masses from ``credal``.

belief14:  L = -log BetP(y) + w * l_set,
           l_set = -(1/14) Σ_{∅≠S⊊Θ} [t_S log b_S + (1 - t_S) log(1 - b_S)],  t_S = [y ∈ S]   (App. B.1)
mass15:    L = -Σ_S m*_S log m_S  (cross-entropy against prescribed set probabilities m*, App. D.4)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from xurs_pipeline.credal import FOCAL_SETS, N_BELIEFS, N_MASSES, check_masses, pignistic
from xurs_pipeline.models.heads import ClassifierOutput

LOG_FLOOR = 1e-12  # probabilities are floored here before the log, so an exact 0 gives a finite loss


@dataclass(frozen=True)
class LossParts:
    """total: scalar batch mean used for the gradient; answer_nll: (batch,) -log BetP(y);
    set_term: (batch,) l_set (belief14) or the set cross-entropy (mass15)."""

    total: torch.Tensor
    answer_nll: torch.Tensor
    set_term: torch.Tensor


def membership_targets(labels: torch.Tensor) -> torch.Tensor:
    """t (batch, 14) with t_S = 1 when the answer y (batch,) lies in S (``FOCAL_SETS[:14]`` order)."""
    member = torch.tensor(
        [[c in s for c in range(4)] for s in FOCAL_SETS[:N_BELIEFS]],
        dtype=torch.float32,
        device=labels.device,
    )  # (14, 4)
    return member[:, labels].T


def answer_nll(
    masses: torch.Tensor, labels: torch.Tensor, computed_in: torch.dtype | None = None
) -> torch.Tensor:
    """-log BetP(y) (batch,) from masses (batch, 15) and answers y (batch,) in 0..3 (Eq. 2).

    ``computed_in``: the autocast dtype the masses were computed in (their sums are checked at its
    tolerance; None: their own dtype's)."""
    check_masses(masses, computed_in=computed_in)
    betp = pignistic(masses, validate=False)  # (batch, 4)
    return -betp.gather(-1, labels.long().unsqueeze(-1)).squeeze(-1).clamp_min(LOG_FLOOR).log()


def rs_loss(
    output: ClassifierOutput,
    labels: torch.Tensor,
    output_kind: str,
    set_weight: float = 0.1,
    target_masses: torch.Tensor | None = None,
    computed_in: torch.dtype | None = None,
) -> LossParts:
    """The training loss of a batch. labels (batch,) in 0..3; target_masses (batch, 15) for mass15;
    ``computed_in``: the autocast dtype of the forward pass (mixed precision), see :func:`answer_nll`."""
    if labels.min() < 0 or labels.max() > 3:
        raise ValueError(f"labels must be option indices 0..3, got range [{labels.min()}, {labels.max()}]")
    nll = answer_nll(output.masses, labels, computed_in)
    if output_kind == "belief14":
        # BCE on logits = the formula above with b_S = sigmoid(raw_S), computed stably.
        set_term = F.binary_cross_entropy_with_logits(
            output.raw.float(), membership_targets(labels), reduction="none"
        ).mean(dim=-1)
        return LossParts(total=(nll + set_weight * set_term).mean(), answer_nll=nll, set_term=set_term)
    if output_kind == "mass15":
        if target_masses is None:
            raise ValueError(
                "output_kind 'mass15' trains against prescribed set probabilities: the data has no "
                "target_masses column (only synthetic sources provide it)"
            )
        if target_masses.shape[-1] != N_MASSES:
            raise ValueError(
                f"target_masses: expected 15 values per row, got shape {tuple(target_masses.shape)}"
            )
        set_term = -(target_masses * output.masses.clamp_min(LOG_FLOOR).log()).sum(dim=-1)
        return LossParts(total=set_term.mean(), answer_nll=nll, set_term=set_term)
    raise ValueError(f"model.output_kind={output_kind!r}: must be 'belief14' or 'mass15'")
