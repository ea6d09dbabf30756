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


def widen(x: torch.Tensor) -> torch.Tensor:
    """``x`` in its compute dtype (no copy when it already is)."""
    return x.to(compute_dtype(x.dtype))
