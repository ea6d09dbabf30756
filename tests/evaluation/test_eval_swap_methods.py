"""The swap study's compared methods (evaluation/swap_methods.py): each captum-backed method equals a direct
computation of what it claims on a small differentiable model, and the readings rank cues as documented."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from xurs_pipeline.evaluation.config import SWAP_METHODS
from xurs_pipeline.evaluation.swap_methods import (
    GRADIENT_METHODS,
    NULL_METHODS,
    RUN_METHODS,
    SPAN_METHODS,
    TOKEN_METHODS,
    CueReading,
    Probe,
    explain,
    random_reading,
    token_reading,
)

SEQ, HIDDEN = 9, 5
CUES = ([2, 3], [6, 7])


class Toy(nn.Module):
    """A width-like scalar of (b, seq, d) embeddings through one block (``layer_ig``'s layer): float64."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.block = nn.Linear(HIDDEN, HIDDEN).double()
        self.read = nn.Linear(HIDDEN, 1).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.block(x))  # (b, seq, d)
        weights = torch.linspace(0.5, 1.5, x.shape[1], dtype=x.dtype)[None, :, None]
        return torch.sigmoid(self.read((h * weights).sum(1))).squeeze(-1)  # (b,)


@pytest.fixture(scope="module")
def toy() -> tuple[Toy, Probe]:
    model = Toy()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1, SEQ, HIDDEN, generator=gen, dtype=torch.float64)
    ref = torch.randn(1, SEQ, HIDDEN, generator=gen, dtype=torch.float64) * 0.1
    return model, Probe(x, CUES, ref)


def _grad(model: Toy, x: torch.Tensor) -> torch.Tensor:
    x = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x)
    return g[0]  # (seq, d)


def test_the_method_groups_partition_the_config_choices() -> None:
    groups = [RUN_METHODS, TOKEN_METHODS, SPAN_METHODS, NULL_METHODS]
    assert sorted(itertools.chain(*groups)) == sorted(SWAP_METHODS)
    assert set(GRADIENT_METHODS) <= set(TOKEN_METHODS)


def test_gradient_methods_equal_autograd(toy) -> None:
    model, probe = toy
    g = _grad(model, probe.embeds)
    expected = {"grad_l2": g.norm(dim=-1), "grad_x_input": (g * probe.embeds[0]).sum(-1).abs()}
    for method, values in expected.items():
        reading = explain(method, model, probe, model.block, steps=8)
        direct = token_reading(values.numpy(), CUES)
        assert reading.best == pytest.approx(direct.best, rel=1e-10)
        assert reading.total == pytest.approx(direct.total, rel=1e-10)
        assert reading.evals == 1


def test_occlusion_is_zero_masking_one_token_and_one_span_at_a_time(toy) -> None:
    model, probe = toy
    base = float(model(probe.embeds.detach()))

    def without(positions: list[int]) -> float:
        x = probe.embeds.clone()
        x[0, positions] = 0.0
        return abs(base - float(model(x)))

    tokens = explain("occlusion_token", model, probe, model.block, steps=8)
    direct = token_reading([without([i]) for i in range(SEQ)], CUES)
    assert tokens.best == pytest.approx(direct.best, rel=1e-10)
    assert tokens.evals == SEQ + 1
    spans = explain("occlusion_span", model, probe, model.block, steps=8)
    assert spans.best == pytest.approx((without(CUES[0]), without(CUES[1])), rel=1e-10)
    assert spans.total == spans.best
    assert spans.evals == 4


def test_shapley_span_equals_the_brute_force_shapley_values(toy) -> None:
    model, probe = toy
    players = [CUES[0], CUES[1], [i for i in range(SEQ) if i not in CUES[0] + CUES[1]]]

    def value(coalition: tuple[int, ...]) -> float:
        x = torch.zeros_like(probe.embeds)
        for p in coalition:
            x[0, players[p]] = probe.embeds[0, players[p]]
        return float(model(x))

    def shapley(i: int) -> float:
        others = [p for p in range(3) if p != i]
        total = 0.0
        for size in range(3):
            for s in itertools.combinations(others, size):
                weight = math.factorial(size) * math.factorial(2 - size) / math.factorial(3)
                total += weight * (value(tuple(sorted((*s, i)))) - value(s))
        return total

    reading = explain("shapley_span", model, probe, model.block, steps=8)
    # captum sums the orders' marginal contributions in float32 (seen: 1e-8 relative on this float64 model)
    assert reading.best == pytest.approx((abs(shapley(0)), abs(shapley(1))), rel=8 * 2**-23)


def test_layer_ig_is_complete_from_the_reference(toy) -> None:
    """IG at a layer sums to f(x) - f(reference) (completeness); checked on the signed sum through captum's
    own attributions by the reading's totals: the toy's block output is the layer integrated over."""
    from captum.attr import LayerIntegratedGradients

    model, probe = toy
    layer = LayerIntegratedGradients(model, model.block).attribute(
        probe.embeds, baselines=probe.reference, n_steps=64
    )
    gap = float(model(probe.embeds) - model(probe.reference))
    assert float(layer.sum()) == pytest.approx(gap, rel=1e-3)
    reading = explain("layer_ig", model, probe, model.block, steps=64)
    direct = token_reading(layer.sum(-1)[0].detach().numpy(), CUES)
    assert reading.total == pytest.approx(direct.total, rel=1e-6)
    assert reading.evals == 64 + 2  # the steps, and captum's forward of the input and of the reference


def test_a_reading_ranks_the_cue_with_the_larger_best_token_and_a_tie_ranks_none() -> None:
    magnitude = np.zeros(SEQ)
    magnitude[[2, 3, 6, 7]] = [0.1, 0.5, 0.4, 0.4]  # cue 2 has more in total, cue 1 the best token
    reading = token_reading(magnitude, CUES)
    assert reading.top == 1
    assert reading.share_1 == pytest.approx(0.6 / 1.4)
    assert CueReading((0.3, 0.3), (0.3, 0.3)).top == 0  # a method that moves both alike ranks neither
    assert math.isnan(CueReading((0.0, 0.0), (0.0, 0.0)).share_1)


def test_the_random_null_is_seeded_and_ignores_the_model() -> None:
    assert random_reading(CUES, SEQ, 3) == random_reading(CUES, SEQ, 3)
    tops = [random_reading(CUES, SEQ, s).top for s in range(400)]
    assert 0.4 < np.mean(np.array(tops) == 1) < 0.6  # either cue first about half the time


def test_an_unknown_method_is_refused(toy) -> None:
    model, probe = toy
    with pytest.raises(ValueError, match="unknown swap method 'lime'"):
        explain("lime", model, probe, model.block, steps=8)
