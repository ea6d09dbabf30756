"""From head outputs to intermediate set values: the App. A recursion, Moebius inversion, set softmax.

A belief head emits 14 sigmoid lower probabilities b_S, one per non-empty proper subset
(``FOCAL_SETS[:14]``). The recursion of App. A recovers an intermediate value per set, processing
singletons, then pairs, then triples:

    m~_{c} = b_{c},     m~_S = b_S - Σ_{∅≠T⊊S} f(m~_T),     2 ≤ |S| ≤ 3          (App. A)

with f = max(·, 0) for the paper's ``"positive_part"`` conversion and f = identity for exact Moebius
inversion (``"mobius"``), which inverts Bel(S) = Σ_{T⊆S} m(T) (Eq. 1) exactly when the b_S are the
beliefs of a mass vector. The correction of Eq. 5 (``correction.py``) then turns m~ into masses.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from xurs_pipeline.credal.focal_sets import SIZE_LEVELS, focal_tensors
from xurs_pipeline.credal.precision import widen
from xurs_pipeline.credal.validation import check_beliefs, check_logits


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


# name -> f, the map applied to a strict subset's intermediate value before it is subtracted (App. A).
CONVERSIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "positive_part": torch.relu,  # the paper's conversion: subtract only nonnegative parts
    "mobius": _identity,  # exact Moebius inversion: subtract signed values
}


def resolve_conversion(conversion: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The subtraction map registered under ``conversion``; ValueError listing the names otherwise."""
    try:
        return CONVERSIONS[conversion]
    except (KeyError, TypeError):
        allowed = ", ".join(repr(name) for name in CONVERSIONS)
        raise ValueError(f"conversion={conversion!r} is unknown; allowed: {allowed}") from None


def intermediate_in_compute_dtype(b: torch.Tensor, conversion: str) -> torch.Tensor:
    """m~ (..., 14) from beliefs (..., 14), in the compute dtype (``precision.py``); no value checks."""
    subtract = resolve_conversion(conversion)
    wide = widen(b)
    strict = focal_tensors(wide.device, wide.dtype).strict_subset  # (15, 15)
    (first_start, first_stop), *later = SIZE_LEVELS
    parts = [wide[..., first_start:first_stop]]  # singletons: m~_{c} = b_{c}
    for start, stop in later:  # pairs, then triples; every strict subset lies in [0, start)
        done = torch.cat(parts, dim=-1)  # (..., start)
        parts.append(wide[..., start:stop] - subtract(done) @ strict[start:stop, :start].T)
    return torch.cat(parts, dim=-1)


def intermediate_values(
    b: torch.Tensor, conversion: str = "positive_part", *, validate: bool = True
) -> torch.Tensor:
    """Intermediate set values m~ (..., 14) of the App. A recursion, in the dtype of ``b`` (..., 14)."""
    check_beliefs(b, validate=validate)
    return intermediate_in_compute_dtype(b, conversion).to(b.dtype)


def masses_from_set_logits(logits: torch.Tensor, *, validate: bool = True) -> torch.Tensor:
    """Masses (..., 15) as a softmax over 15 set logits (..., 15) in ``FOCAL_SETS`` order (no correction).

    For heads that predict the 15 set probabilities directly (Sec. 5.4's controlled model). Logits must
    be finite.
    """
    check_logits(logits, validate=validate)
    return torch.softmax(widen(logits), dim=-1).to(logits.dtype)
