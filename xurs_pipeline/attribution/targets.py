"""Target functions of the masses that zero-masking (and attribution) can explain.

A registry ``name -> fn(masses (batch, 15), c (batch,) long) -> (batch,)``, as in inseq. ``width`` is the
paper's target, ``F_c = W_c`` (Eq. 2); ``entropy`` (predictive entropy of BetP) and ``betp`` (the selected
answer's BetP, Eq. 2) are the comparison targets the paper names as next steps (Sec. 7). All three are
computed from ``xurs_pipeline.credal``; nothing is re-derived here.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from xurs_pipeline import credal
from xurs_pipeline.attribution.config import TARGET_NAMES

TargetFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _pick(values: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """values (batch, 4), c (batch,) -> values[b, c[b]] (batch,)."""
    return values.gather(-1, c.long().reshape(-1, 1)).squeeze(-1)


def _entropy_per_option(masses: torch.Tensor, validate: bool = True) -> torch.Tensor:
    """Predictive entropy ``-sum_k BetP(k) log BetP(k)`` (nats, 0 log 0 = 0), the same for every option.
    masses (batch, 15) -> (batch, 4)."""
    p = credal.pignistic(masses, validate=validate)
    entropy: torch.Tensor = -(torch.special.xlogy(p, p)).sum(-1, keepdim=True)
    return entropy.expand(-1, p.shape[-1])


# name -> fn(masses (batch, 15), validate) -> (batch, 4): the target's value for each answer option; what
# attribution differentiates (Eq. 3 with F_c the chosen target) and zero-masking measures.
PER_OPTION: dict[str, Callable[..., torch.Tensor]] = {
    "width": credal.credal_width,  # W_c = Pl({c}) - Bel({c}) (Eq. 2)
    "entropy": _entropy_per_option,
    "betp": credal.pignistic,  # BetP(c) (Eq. 2)
}


def option_values(name: str, masses: torch.Tensor, validate: bool = True) -> torch.Tensor:
    """Target ``name`` for each option, (batch, 15) -> (batch, 4); KeyError naming the valid names."""
    if name not in PER_OPTION:
        raise KeyError(f"unknown target function {name!r}; valid: {sorted(PER_OPTION)}")
    return PER_OPTION[name](masses, validate=validate)


def width_target(masses: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Credal width of answer c, ``W_c = Pl({c}) - Bel({c})`` (Eq. 2). masses (batch, 15) -> (batch,)."""
    return _pick(option_values("width", masses), c)


def betp_target(masses: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Pignistic probability of answer c, ``BetP(c)`` (Eq. 2). masses (batch, 15) -> (batch,)."""
    return _pick(option_values("betp", masses), c)


def entropy_target(masses: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Predictive entropy ``-sum_k BetP(k) log BetP(k)`` (nats, 0 log 0 = 0); c is unused. -> (batch,)."""
    return _pick(option_values("entropy", masses), c)


TARGETS: dict[str, TargetFn] = dict(
    zip(TARGET_NAMES, (width_target, entropy_target, betp_target), strict=True)
)


def get_target(name: str) -> TargetFn:
    """The target function called ``name``; an unknown name raises KeyError listing the valid ones."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(
            f"unknown target function {name!r} (config key evaluation.targets); valid: {sorted(TARGETS)}"
        ) from None
