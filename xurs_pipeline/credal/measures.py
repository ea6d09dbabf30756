"""Belief, plausibility, credal width and pignistic probability of a mass vector (Eq. 1, 2).

Every function takes masses m (..., 15) in ``FOCAL_SETS`` order; with ``validate=True`` (default) they
are checked by :func:`check_masses` first (entries in [0, 1], sums 1). Singleton measures return
(..., 4), one per option; event measures return (...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache

import torch

from xurs_pipeline.credal.focal_sets import N_OPTIONS, FocalTensors, event_masks, focal_tensors
from xurs_pipeline.credal.precision import widen
from xurs_pipeline.credal.validation import check_event, check_masses


def _contract(
    m: torch.Tensor, matrix: Callable[[FocalTensors], torch.Tensor], validate: bool
) -> torch.Tensor:
    """m (..., 15) @ one (15, k) relation matrix of ``FocalTensors`` -> (..., k), in the compute dtype."""
    check_masses(m, validate=validate)
    wide = widen(m)
    return (wide @ matrix(focal_tensors(wide.device, wide.dtype))).to(m.dtype)


def belief(m: torch.Tensor, *, validate: bool = True) -> torch.Tensor:
    """Bel({c}) = m({c}) (Eq. 1), (..., 4)."""
    check_masses(m, validate=validate)
    return m[..., :N_OPTIONS].clone()


def plausibility(m: torch.Tensor, *, validate: bool = True) -> torch.Tensor:
    """Pl({c}) = Σ_{S∋c} m(S) (Eq. 1), (..., 4)."""
    return _contract(m, lambda t: t.membership, validate)


def credal_width(m: torch.Tensor, *, validate: bool = True) -> torch.Tensor:
    """W_c = Pl({c}) - Bel({c}) = Σ_{S∋c, |S|>1} m(S) (Eq. 2), (..., 4); summed directly, no cancellation."""
    return _contract(m, lambda t: t.width_membership, validate)


def pignistic(m: torch.Tensor, *, validate: bool = True) -> torch.Tensor:
    """BetP(c) = Σ_{S∋c} m(S) / |S| (Eq. 2), (..., 4)."""
    return _contract(m, lambda t: t.pignistic, validate)


@lru_cache(maxsize=128)
def _event_vectors(
    event: tuple[int, ...], device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    inside, overlapping = event_masks(event)
    return (
        torch.tensor(inside, dtype=dtype, device=device),
        torch.tensor(overlapping, dtype=dtype, device=device),
    )


def _event_measure(m: torch.Tensor, event: Iterable[int], which: int, validate: bool) -> torch.Tensor:
    checked = check_event(event)  # always: validating a tuple of ints is free
    check_masses(m, validate=validate)
    wide = widen(m)
    return (wide @ _event_vectors(checked, wide.device, wide.dtype)[which]).to(m.dtype)


def belief_of(m: torch.Tensor, event: Iterable[int], *, validate: bool = True) -> torch.Tensor:
    """Bel(E) = Σ_{S⊆E} m(S) (Eq. 1), (...), for an event E given as option indices, e.g. (1, 2)."""
    return _event_measure(m, event, 0, validate)


def plausibility_of(m: torch.Tensor, event: Iterable[int], *, validate: bool = True) -> torch.Tensor:
    """Pl(E) = Σ_{S∩E≠∅} m(S) (Eq. 1), (...), for an event E given as option indices, e.g. (1, 2)."""
    return _event_measure(m, event, 1, validate)
