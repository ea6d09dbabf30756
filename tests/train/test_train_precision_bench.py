"""``bench/train_precision.py``: its training step runs in float32 and under bf16 autocast on the tuned
blocks of a (tiny) Llama, and moves only those blocks' weights."""

from __future__ import annotations

import pytest
import torch
from bench_scripts import load_bench_script

from xurs_pipeline.models.tiny import build_tiny_llama


@pytest.mark.parametrize("bf16", [False, True])
def test_the_step_trains_the_tuned_blocks_only(bf16: bool) -> None:
    bench = load_bench_script("train_precision")
    decoder = build_tiny_llama(50, num_layers=3).model
    tuned, frozen = list(decoder.layers[-2:]), decoder.layers[0]
    before = [p.detach().clone() for b in (*tuned, frozen) for p in b.parameters()]
    step = bench.step_fn(decoder, tuned, batch=2, tokens=6)
    step(bf16)
    after = [p.detach() for b in (*tuned, frozen) for p in b.parameters()]
    n_tuned = sum(1 for b in tuned for _ in b.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before[:n_tuned], after[:n_tuned], strict=True))
    assert all(torch.equal(a, b) for a, b in zip(before[n_tuned:], after[n_tuned:], strict=True))
