"""Floating-point policy of the credal maths.

Inputs may be float16, bfloat16, float32 or float64. Half-precision inputs (float16, bfloat16) are
computed in float32: their spacing near 1 (2^-10 and 2^-7) cannot resolve the rescaling threshold
s > 1 + 1e-6 (Sec. 5.3), and the sums of Eq. 1, 2 and 5 lose several bits. float32 and float64 are
computed as they are. Every result is cast back to the input dtype (casts are differentiable, so
gradients reach half-precision inputs unchanged in dtype).
"""

from __future__ import annotations

import torch

SUPPORTED_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_WIDENED = {torch.float16: torch.float32, torch.bfloat16: torch.float32}

# |Σ_S m(S) - 1| allowed for masses computed in a dtype with machine epsilon eps: max(ULPS * eps, FLOOR).
# Rounding 15 masses in [0, 1] to the dtype moves their sum by at most eps / 2, and normalising in that dtype
# (Eq. 5's division, a softmax) adds a few eps more: 8 eps covers both (bfloat16 0.0625, float16 0.0078).
# FLOOR is the float32 tolerance: float32 sums keep it, and float64 masses are usually float32 results
# widened (read back from parquet), which only float32's tolerance describes.
MASS_SUM_ULPS = 8
MASS_SUM_FLOOR = 1e-5


def check_dtype(x: torch.Tensor, name: str) -> None:
    """Raise TypeError unless ``x`` is a tensor, ValueError unless its dtype is supported."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        allowed = ", ".join(str(d) for d in SUPPORTED_DTYPES)
        raise ValueError(f"{name} has dtype {x.dtype}; allowed dtypes: {allowed}")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the maths runs in for inputs of ``dtype``: float32 for half precision, else ``dtype``."""
    return _WIDENED.get(dtype, dtype)


def coarsest(*dtypes: torch.dtype | None) -> torch.dtype:
    """The dtype of largest machine epsilon among ``dtypes`` (None entries ignored): the precision a value
    has when any of them computed it (e.g. a float32 tensor produced under bfloat16 autocast)."""
    present = [d for d in dtypes if d is not None]
    if not present:
        raise ValueError("coarsest() needs at least one dtype")
    return max(present, key=lambda d: torch.finfo(d).eps)


def mass_sum_tolerance(dtype: torch.dtype) -> float:
    """Tolerance on |Σ_S m(S) - 1| for masses (..., 15) computed in ``dtype``: max(8 eps, 1e-5) (see
    ``MASS_SUM_ULPS``): bfloat16 0.0625, float16 0.0078, float32 and float64 1e-5."""
    return max(MASS_SUM_ULPS * torch.finfo(dtype).eps, MASS_SUM_FLOOR)


def widen(x: torch.Tensor) -> torch.Tensor:
    """``x`` in its compute dtype (no copy when it already is)."""
    return x.to(compute_dtype(x.dtype))
