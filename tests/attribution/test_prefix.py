"""Shared-prefix reuse (``attribution.reuse_prefix``): the same sums as the full-length path, prefix rows
exactly 0, and the full-length path wherever the prefix is short or the model cannot continue from one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import PAD_ID, TinyBeliefClassifier
from peft import LoraConfig, get_peft_model

from xurs_pipeline.attribution import prefix as prefix_mod
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.endpoints import prompt_of
from xurs_pipeline.attribution.gradients import Batching, accumulate
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.model import Objective
from xurs_pipeline.attribution.plan import eg_plan, ig_plan
from xurs_pipeline.attribution.records import Question
from xurs_pipeline.attribution.references import prepare_aligned, prepare_training, prepare_zero
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead
from xurs_pipeline.models.tiny import build_tiny_llama

CPU = torch.device("cpu")
VOCAB, HIDDEN, LENGTH = 64, 32, 48


def _classifier(lora: bool = False, **features) -> RandomSetClassifier:
    """Tiny 3-layer Llama + belief head whose pairs and triples keep mass (W_c > 0 for every c)."""
    backbone = build_tiny_llama(VOCAB, hidden_size=HIDDEN, num_layers=3, num_heads=4, seed=0).model
    if lora:  # LoRA B starts at 0 (an identity adapter): make it count
        backbone = get_peft_model(backbone, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
        gen = torch.Generator().manual_seed(5)
        with torch.no_grad():
            for name, param in backbone.named_parameters():
                if "lora_B" in name:
                    param.copy_(0.2 * torch.randn(param.shape, generator=gen))
    width = HIDDEN * len(features.get("feature_layers", (-1,)))
    model = RandomSetClassifier(backbone, RandomSetHead(width, "belief14", seed=1), **features)
    with torch.no_grad():
        model.head.net.bias.copy_(torch.tensor([-3.0] * 4 + [-1.2] * 6 + [0.3] * 4))
    return model.eval()


def _ids(seed: int = 0, length: int = LENGTH) -> list[int]:
    rng = np.random.default_rng(seed)
    return [1, *rng.integers(3, VOCAB, length - 1).tolist()]


def _paired(ids: list[int], at: int) -> list[int]:
    """The prompt with two tokens replaced at ``at`` and the token after them deleted (so the aligned
    reference also holds padding there), like a clue removed from a paired prompt."""
    return [*ids[:at], 3 + (ids[at] + 1) % (VOCAB - 3), 3 + (ids[at + 1] + 1) % (VOCAB - 3), *ids[at + 3 :]]


def _sums(model, refs, plan, targets, route, reuse: bool, samples_per_call: int = 3):
    prompt = prompt_of(model, _ids(), CPU)
    objective = Objective.build(targets, route)
    return accumulate(model, objective, prompt, refs, plan, samples_per_call, Batching(reuse_prefix=reuse))


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


@pytest.mark.parametrize(
    ("case", "route", "lora"),
    [
        ("aligned_ig", "direct", False),
        ("aligned_ig", "answer_set", False),
        ("aligned_eg", "direct", True),
        ("template_eg", "answer_set", False),
        ("template_eg", "direct", True),
    ],
)
def test_prefix_path_equals_full_path(case: str, route: str, lora: bool) -> None:
    """Aligned paired reference (one clue around 3/4 of the prompt) or training references that share
    a 20-token template; several targets; 8 samples in batches of 3 (the cache is reused 3 times)."""
    model = _classifier(lora)
    ids = _ids()
    if case.startswith("aligned"):
        refs = prepare_aligned(ids, _paired(ids, 36), "pair", PAD_ID, CPU)
        expected = 36
    else:
        others = [[*ids[:20], *_ids(seed)[20 : 20 + 10 * seed]] for seed in (1, 2, 3)]
        refs = prepare_training(ids, others, ["a", "b", "c"], PAD_ID, CPU)
        expected = 20
    assert min(min(c) for c in refs.changed_positions) == expected
    plan = ig_plan(0, "gausslegendre", 8) if case.endswith("ig") else eg_plan(len(refs), 8, 11)
    fast, full = (_sums(model, refs, plan, (0, 1, 3), route, reuse) for reuse in (True, False))
    assert (fast.prefix, full.prefix) == (expected, 0)
    assert fast.e[:, :expected].abs().max() == 0  # rows [0, p) never computed: exactly 0
    assert full.e[:, :expected].abs().max() == 0  # (X - B_s) = 0 there on the full path too
    assert _relative(fast.e, full.e) < 1e-5
    assert _relative(fast.per_ref, full.per_ref) < 1e-5
    assert full.e.abs().max() > 0
    assert not fast.nonfinite.any()
    assert all(p.grad is None for p in model.parameters())  # only embeddings were differentiated


@pytest.mark.parametrize(("at", "length"), [(0, LENGTH), (5, LENGTH), (9, 100)])
def test_short_shared_prefix_falls_back(at: int, length: int) -> None:
    """p below MIN_TOKENS (8), or below MIN_FRACTION (10%) of L, runs the full-length path: identical sums."""
    model = _classifier()
    ids = _ids(length=length)
    refs = prepare_aligned(ids, _paired(ids, at), "pair", PAD_ID, CPU)
    prompt = prompt_of(model, ids, CPU)
    index = torch.zeros(1, dtype=torch.long)
    assert prefix_mod.shared_length(model, prompt, refs, index) == at
    assert prefix_mod.shared_prefix(model, prompt, refs, index) is None
    objective, plan = Objective.build((0,), "direct"), ig_plan(0, "gausslegendre", 4)
    runs = [Batching(reuse_prefix=reuse) for reuse in (True, False)]
    sums = [accumulate(model, objective, prompt, refs, plan, 4, batching) for batching in runs]
    assert sums[0].prefix == 0
    assert torch.equal(sums[0].e, sums[1].e)


def test_shared_length_stops_before_the_last_real_token_and_at_the_zero_baseline() -> None:
    model = _classifier()
    ids = _ids()
    prompt = prompt_of(model, ids, CPU)
    index = torch.zeros(1, dtype=torch.long)
    same = prepare_training(ids, [ids], ["self"], PAD_ID, CPU)  # equal everywhere: keep the last token
    assert prefix_mod.shared_length(model, prompt, same, index) == LENGTH - 1
    assert prefix_mod.shared_length(model, prompt, prepare_zero(ids), index) == 0


@pytest.mark.parametrize(
    "model_kind", ["analytic", "mean_pooling", "intermediate_layer", "last_and_intermediate"]
)
def test_models_that_cannot_continue_from_a_prefix_use_the_full_path(model_kind: str) -> None:
    """No ``PrefixReuse`` (test models), or features other than the final layer at the last token."""
    features = {
        "analytic": None,
        "mean_pooling": {"pooling": "mean"},
        "intermediate_layer": {"feature_layers": (-2,)},
        "last_and_intermediate": {"feature_layers": (-2, -1)},
    }[model_kind]
    model = TinyBeliefClassifier() if features is None else _classifier(**features)
    ids = _ids()
    refs = prepare_aligned(ids, _paired(ids, 36), "pair", PAD_ID, CPU)
    prompt = prompt_of(model, ids, CPU)
    assert prefix_mod.shared_length(model, prompt, refs, torch.zeros(1, dtype=torch.long)) == 36
    sums = accumulate(model, Objective.build((0,), "direct"), prompt, refs, ig_plan(0, "gausslegendre", 4), 4)
    assert sums.prefix == 0
    assert sums.e.abs().max() > 0


@pytest.mark.parametrize("method", ["eg", "ig"])
def test_attribution_config_switch_gives_the_same_rows(method: str) -> None:
    """``attribution.reuse_prefix`` true vs false through ``attribute_question`` (aligned reference)."""
    model = _classifier()
    ids = _ids()
    question = Question("q", tuple(ids), 2, "pair", tuple(_paired(ids, 30)))
    rows = {}
    for reuse in (True, False):
        cfg = AttributionConfig(
            method=method,
            reference="aligned",
            refs_per_collection=1,
            n_samples=6,
            ig_points=6,
            samples_per_call=4,
            target="all",
            reuse_prefix=reuse,
            progress=False,
        )
        rows[reuse] = attribute_question(model, question, None, cfg, PAD_ID).rows
    assert len(rows[True]) == 4
    for fast, full in zip(rows[True], rows[False], strict=True):
        assert _relative(fast.coords["e"], full.coords["e"]) < 1e-5
        assert fast.coords["e"][:30].abs().max() == 0
        assert fast.residual == pytest.approx(full.residual, abs=1e-6)
