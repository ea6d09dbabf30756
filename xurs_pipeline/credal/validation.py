"""Input checks for the credal maths: shape, dtype, value range, normalisation, events.

Shape and dtype checks cost nothing and always run. The value scan (NaN, values outside [0, 1], mass
sums) needs one or two reductions, each with a device-to-host sync; functions offer ``validate=False`` to
skip it in hot loops (training steps, attribution sampling) where the inputs come from trusted code.
Nothing is ever clamped: bad values raise ValueError naming the first offending index tuple and value.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import torch

from xurs_pipeline.credal.focal_sets import FOCAL_SETS, N_BELIEFS, N_MASSES, N_OPTIONS
from xurs_pipeline.credal.precision import check_dtype, coarsest, mass_sum_tolerance, widen


def check_last_dim(x: torch.Tensor, size: int, name: str, meaning: str) -> None:
    """Raise unless ``x`` is a supported float tensor of shape (..., size)."""
    check_dtype(x, name)
    if x.dim() == 0 or x.shape[-1] != size:
        raise ValueError(f"{name} must have shape (..., {size}) ({meaning}); got shape {tuple(x.shape)}")


def _first_position(bad: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in bad.nonzero()[0].tolist())


def _describe(x: torch.Tensor, name: str, position: tuple[int, ...]) -> str:
    """``name[i, j] = value (focal set S)``; the last index of every checked tensor is a FOCAL_SETS index."""
    index = ", ".join(map(str, position))
    return f"{name}[{index}] = {x[position].item()!r} (focal set {FOCAL_SETS[position[-1]]})"


def check_unit_interval(x: torch.Tensor, name: str) -> None:
    """Raise ValueError at the first entry that is NaN or outside [0, 1] (one reduction, one sync)."""
    if x.numel() == 0:
        return
    low, high = torch.aminmax(x.detach())  # NaN propagates into both
    if bool((low >= 0) & (high <= 1)):
        return
    bad = ~((x.detach() >= 0) & (x.detach() <= 1))
    position = _first_position(bad)
    raise ValueError(f"{_describe(x, name, position)} is not in [0, 1]; allowed: values in [0, 1]")


def check_finite(x: torch.Tensor, name: str) -> None:
    """Raise ValueError at the first NaN or infinite entry."""
    finite = torch.isfinite(x.detach())
    if x.numel() == 0 or bool(finite.all()):
        return
    position = _first_position(~finite)
    raise ValueError(f"{_describe(x, name, position)} is not finite; allowed: finite values")


def check_beliefs(b: torch.Tensor, *, validate: bool = True, name: str = "beliefs") -> None:
    """Beliefs: (..., 14) lower probabilities of ``FOCAL_SETS[:14]``, each in [0, 1]."""
    check_last_dim(b, N_BELIEFS, name, "one lower probability per non-empty proper subset, FOCAL_SETS[:14]")
    if validate:
        check_unit_interval(b, name)


def check_masses(
    m: torch.Tensor,
    *,
    validate: bool = True,
    computed_in: torch.dtype | None = None,
    name: str = "masses",
) -> torch.Tensor:
    """Check a mass vector (..., 15) in ``FOCAL_SETS`` order and return it unchanged.

    Valid means (Sec. 3.1): every entry in [0, 1] and each vector sums to 1 within the tolerance of the
    dtype that computed it (``mass_sum_tolerance``): the coarser of ``m.dtype`` and ``computed_in`` (e.g.
    bfloat16 for float32 outputs of a bfloat16 autocast region). With ``validate=False`` only shape and
    dtype are checked.
    """
    check_last_dim(m, N_MASSES, name, "one mass per non-empty subset, in FOCAL_SETS order")
    if not validate:
        return m
    check_unit_interval(m, name)
    tolerance = mass_sum_tolerance(coarsest(m.dtype, computed_in))
    totals = widen(m.detach()).sum(-1)
    off = (totals - 1).abs() > tolerance
    if m.numel() and bool(off.any()):
        position = _first_position(off)
        index = ", ".join([*map(str, position), ":"])
        raise ValueError(
            f"{name}[{index}] sums to {totals[position].item()!r} (|sum - 1| > {tolerance:g}); "
            "allowed: masses that sum to 1"
        )
    return m


def check_logits(logits: torch.Tensor, *, validate: bool = True, name: str = "logits") -> None:
    """Set logits: (..., 15) finite scores, one per focal set in ``FOCAL_SETS`` order."""
    check_last_dim(logits, N_MASSES, name, "one logit per non-empty subset, in FOCAL_SETS order")
    if validate:
        check_finite(logits, name)


def check_event(event: Iterable[int]) -> tuple[int, ...]:
    """Validate an event (a collection of distinct option indices in 0..3) and return it sorted.

    The empty event is allowed (Bel(∅) = Pl(∅) = 0), so that Pl(E) = 1 - Bel(Θ \\ E) holds for every E.
    """
    if isinstance(event, str | bytes) or not isinstance(event, Iterable):
        raise ValueError(f"event must be a tuple of option indices in 0..{N_OPTIONS - 1}, got {event!r}")
    items = tuple(event)
    allowed = f"allowed: distinct integer option indices in 0..{N_OPTIONS - 1}"
    indices = []
    for item in items:
        try:
            index = operator.index(item)
        except TypeError:
            index = None
        if isinstance(item, bool) or index is None or not 0 <= index < N_OPTIONS:
            raise ValueError(f"event {items!r} contains {item!r}; {allowed}")
        indices.append(index)
    if len(set(indices)) != len(indices):
        raise ValueError(f"event {items!r} repeats an option index; {allowed}")
    return tuple(sorted(indices))
