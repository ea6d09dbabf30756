"""Planted two-cue models on the embeddings (evaluation/swap/planted_methods.py): the hand-set mechanisms are
what the docstring says (their logit changes computed here by hand), and each token method recovers the
planted cue exactly where its kind can see it: a gradient or one token at a time misses the saturated cue,
a method crediting the cue as a whole misses the cancelling one, integrated gradients from the zero
reference (``layer_ig`` through the identity block) sees both, the gradient norm ties every position."""

from __future__ import annotations

import math

import pytest
import torch

from xurs_pipeline.attribution.config import TOKEN_METHODS
from xurs_pipeline.attribution.targets import width_target
from xurs_pipeline.evaluation.swap.planted_methods import (
    CUES,
    LENGTH,
    MECHANISMS,
    PlantedCues,
    method_recovery,
)

BY_NAME = {m.name: m for m in MECHANISMS}


def z_change(name: str, zeroed: tuple[int, ...]) -> float:
    """|z(X) - z(X with the positions ``zeroed``)| of one mechanism."""
    mechanism = BY_NAME[name]
    model = PlantedCues(mechanism)
    x = model.embeds()
    cut = x.clone()
    cut[0, list(zeroed)] = 0.0
    z = [float(mechanism.z(e[0, :, 0].sum(), e[0, :, 1].sum())) for e in (x, cut)]
    return abs(z[0] - z[1])


def test_the_mechanisms_move_the_logit_as_documented() -> None:
    assert z_change("saturated", CUES[0]) == pytest.approx(3 * math.tanh(3.0), abs=1e-12)  # float64
    assert z_change("saturated", CUES[0][:1]) == pytest.approx(3 * (math.tanh(3.0) - math.tanh(1.5)))  # 0.27
    assert z_change("saturated", CUES[1]) == pytest.approx(0.5)
    assert z_change("cancelling", CUES[0][:1]) == pytest.approx(2.0)
    assert z_change("cancelling", CUES[0]) == pytest.approx(0.0)  # the two tokens cancel
    assert z_change("cancelling", CUES[1]) == pytest.approx(0.3)
    assert z_change("interaction", CUES[1]) > z_change("interaction", CUES[0])
    others = tuple(p for p in range(LENGTH) if p not in CUES[0] + CUES[1])
    for name in BY_NAME:
        assert z_change(name, others) == 0.0  # nothing else is read


def test_the_width_is_one_minus_the_answer_mass() -> None:
    model = PlantedCues(BY_NAME["linear"])
    x = model.embeds()
    ones = torch.ones(1, LENGTH, dtype=torch.long)
    width = width_target(model(x, ones, torch.arange(LENGTH)[None]), torch.tensor([0]))
    assert float(width.detach()) == pytest.approx(1 / (1 + math.exp(1.5)), rel=1e-12)  # z = 2 + 0.5 - 1


def test_each_method_recovers_the_planted_cue_where_its_kind_can_see_it() -> None:
    table = method_recovery(TOKEN_METHODS).pivot(index="method", columns="mechanism", values="top")
    expected = {  # linear, saturated, cancelling, interaction (truth 1, 1, 1, 2; 0 = a tie)
        "grad_l2": (0, 0, 0, 0),  # the same gradient at every position of a sum over positions
        "grad_x_input": (1, 2, 1, 2),
        "occlusion_token": (1, 2, 1, 2),
        "occlusion_span": (1, 1, 2, 2),
        "shapley_span": (1, 1, 2, 2),
        "layer_ig": (1, 1, 1, 2),
        "sequential_ig": (1, 2, 1, 2),  # per token complete: occlusion_token's values (zero baseline)
    }
    for method, tops in expected.items():
        found = tuple(int(table.loc[method, m]) for m in ("linear", "saturated", "cancelling", "interaction"))
        assert found == tops, method
    recovered = method_recovery(["layer_ig", "occlusion_token"]).groupby("method")["recovered"].all()
    assert recovered.to_dict() == {"layer_ig": True, "occlusion_token": False}
