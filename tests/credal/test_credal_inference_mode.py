"""A first call under ``torch.inference_mode()`` must not poison later autograd through the cache."""

from __future__ import annotations

import torch

from xurs_pipeline.credal import credal_width, masses_from_set_logits
from xurs_pipeline.credal.focal_sets import focal_tensors


def test_gradients_work_after_a_first_call_in_inference_mode():
    focal_tensors.cache_clear()
    with torch.inference_mode():
        credal_width(masses_from_set_logits(torch.zeros(2, 15)))
    logits = torch.randn(3, 15, dtype=torch.float32, requires_grad=True)
    credal_width(masses_from_set_logits(logits))[:, 0].sum().backward()
    assert logits.grad is not None
    assert torch.isfinite(logits.grad).all()
    assert logits.grad.abs().sum() > 0
