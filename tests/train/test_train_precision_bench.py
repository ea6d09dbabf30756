"""``bench/train_precision.py``: its training step, through the module ``train`` fits under partial tuning,
runs in float32 and under bf16 autocast on a (tiny) classifier and moves only the tuned blocks' weights."""

from __future__ import annotations

import pytest
import torch
from bench_scripts import load_bench_script
from rs_fixtures import fresh_classifier

from xurs_pipeline.models.adapters import apply_adaptation


@pytest.mark.parametrize("bf16", [False, True])
def test_the_step_trains_the_tuned_blocks_only(tiny_backbone_dir, bf16: bool) -> None:
    bench = load_bench_script("train_precision")
    classifier, _ = fresh_classifier(tiny_backbone_dir)
    apply_adaptation(classifier, "partial", 1)
    tuned, frozen = classifier.backbone.layers[-1:], classifier.backbone.layers[0]
    before = [p.detach().clone() for b in (*tuned, frozen) for p in b.parameters()]
    step = bench.step_fn(classifier, 1, batch=2, tokens=6)
    step(bf16)
    after = [p.detach() for b in (*tuned, frozen) for p in b.parameters()]
    n_tuned = sum(1 for b in tuned for _ in b.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before[:n_tuned], after[:n_tuned], strict=True))
    assert all(torch.equal(a, b) for a, b in zip(before[n_tuned:], after[n_tuned:], strict=True))
