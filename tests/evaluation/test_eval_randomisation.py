"""Model-randomisation sanity check and the comparison target registry."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from eval_cases import masses_from
from torch import nn

from xurs_pipeline.attribution.targets import TARGETS, get_target
from xurs_pipeline.evaluation.comparisons import RunRecord
from xurs_pipeline.evaluation.randomisation import cascade_names, randomisation_check, reinitialise


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(6, 6), nn.Linear(6, 6)])
        self.head = nn.Linear(6, 15)
        self.scale = nn.Parameter(torch.ones(1))  # outside every reset_parameters module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (seq, 6) -> masses (1, 15)."""
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return torch.softmax(self.head(x.mean(0, keepdim=True)) * self.scale, -1)


X = torch.randn(9, 6, generator=torch.Generator().manual_seed(1))


def grad_times_input(model: nn.Module) -> list[RunRecord]:
    x = X.clone().requires_grad_(True)
    get_target("width")(model(x), torch.tensor([0])).sum().backward()
    coords = (x.grad * X).numpy()
    return [RunRecord("q", 0, "zero", np.linalg.norm(coords, axis=1), coords, 0.0)]


def input_norm(model: nn.Module) -> list[RunRecord]:
    """A 'explanation' that ignores the model entirely."""
    coords = X.numpy().copy()
    return [RunRecord("q", 0, "zero", np.linalg.norm(coords, axis=1), coords, 0.0)]


def test_randomising_head_then_blocks_moves_gradient_attributions_not_model_free_ones():
    model = Net()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cascade = cascade_names(model, "head", 2)
    assert cascade == ["head", "layers.1", "layers.0"]
    moved = randomisation_check(model, grad_times_input, cascade, seed=3, topk=3)
    assert moved["randomised"].tolist() == cascade
    assert moved["step"].tolist() == [0, 1, 2]
    assert (moved["relative_distance"] > 0.2).all()
    assert (moved["spearman"] < 0.9).all()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # the model is untouched
    still = randomisation_check(model, input_norm, cascade)
    assert np.allclose(still["spearman"], 1.0)
    assert np.allclose(still["relative_distance"], 0.0)


def test_reinitialise_is_seeded_and_refuses_modules_it_cannot_reset():
    a, b = Net(), Net()
    assert reinitialise(a, "head", 5) == 1
    reinitialise(b, "head", 5)
    assert torch.equal(a.head.weight, b.head.weight)
    assert not torch.equal(a.head.weight, Net().head.weight)
    with pytest.raises(ValueError, match="only 2 blocks"):
        cascade_names(a, "head", 3)
    with pytest.raises(AttributeError, match="classifier"):
        cascade_names(a, "classifier", 1)
    with pytest.raises(ValueError, match="'0' has no submodule with reset_parameters"):
        reinitialise(nn.Sequential(nn.Tanh()), "0", 1)
    with pytest.raises(ValueError, match="empty"):
        randomisation_check(a, grad_times_input, [])


def test_target_registry_values_and_unknown_names():
    m = torch.tensor([masses_from({(0,): 0.5, (0, 1): 0.5})], dtype=torch.float64)
    c = torch.tensor([0])
    assert get_target("width")(m, c).item() == pytest.approx(0.5)  # W_A = m({A,B})
    assert get_target("betp")(m, c).item() == pytest.approx(0.75)  # 0.5 + 0.5 / 2
    assert get_target("betp")(m, torch.tensor([1])).item() == pytest.approx(0.25)
    assert get_target("entropy")(m, c).item() == pytest.approx(
        -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    )
    uniform = torch.tensor([masses_from({(0, 1, 2, 3): 1.0})], dtype=torch.float64)
    assert get_target("entropy")(uniform, c).item() == pytest.approx(math.log(4))
    assert sorted(TARGETS) == ["betp", "entropy", "width"]
    with pytest.raises(KeyError, match=r"'variance'.*evaluation\.targets.*\['betp', 'entropy', 'width'\]"):
        get_target("variance")
