"""``set_precision``: the backbone runs in bfloat16/float16, the head and the masses stay float32 (Table 5:
half-precision passes, FP32 averaging)."""

from __future__ import annotations

import torch
from helpers import TinyBeliefClassifier

from xurs_pipeline.attribution.model import model_dtype, set_precision
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead
from xurs_pipeline.models.tiny import build_tiny_llama


def _classifier() -> RandomSetClassifier:
    backbone = build_tiny_llama(64, hidden_size=32, num_layers=2, num_heads=4, seed=0).model
    return RandomSetClassifier(backbone, RandomSetHead(32, "belief14", seed=1)).eval()


def test_backbone_half_head_float32_and_back() -> None:
    model = _classifier()
    ids = torch.tensor([[1, 5, 9, 12, 40, 7]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        fp32 = model.classify_ids(ids, mask).masses
    set_precision(model, torch.bfloat16)
    assert {p.dtype for p in model.backbone.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in model.head.parameters()} == {torch.float32}
    assert model_dtype(model) == torch.bfloat16
    with torch.no_grad():
        bf16 = model.classify_ids(ids, mask).masses
    assert bf16.dtype == torch.float32
    assert 0 < float((bf16 - fp32).abs().max()) < 0.05  # rounded, not broken
    set_precision(model, torch.float32)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_a_model_without_backbone_is_cast_whole() -> None:
    model = TinyBeliefClassifier(vocab=40)
    set_precision(model, torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
