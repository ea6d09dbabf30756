"""The swap control's randomised models (tasks/attribute_swap.py): what ``evaluation.swap_randomise``
resets."""

from __future__ import annotations

import types

import pandas as pd
import pytest
import torch
from torch import nn

from xurs_pipeline.errors import XursError
from xurs_pipeline.evaluation.config import EvaluationConfig
from xurs_pipeline.evaluation.randomisation import reinitialise
from xurs_pipeline.evaluation.swap.roles import study_runs
from xurs_pipeline.evaluation.swap.study import headline
from xurs_pipeline.tasks.attribute_swap import _randomise, randomised_blocks


class Classifier(nn.Module):
    """The shape the randomisation reads: ``head`` and a ModuleList of blocks under ``backbone``."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.backbone = nn.Module()
        self.backbone.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(4))
        self.head = nn.Linear(4, 15)


def changed(before: dict[str, torch.Tensor], model: nn.Module) -> set[str]:
    """Names of the modules any of whose parameters moved."""
    return {k.rsplit(".", 1)[0] for k, v in model.state_dict().items() if not torch.equal(before[k], v)}


def test_head_scope_resets_only_the_head_as_before() -> None:
    model, reference = Classifier(), Classifier()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    _randomise(model, seed=3, blocks=0)
    reinitialise(reference, "head", 3)  # the head-only randomisation the swap study always had
    assert changed(before, model) == {"head"}
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), reference.state_dict().values(), strict=True)
    )


def test_tuned_scope_resets_the_head_and_the_top_blocks_only() -> None:
    model = Classifier()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    _randomise(model, seed=3, blocks=2)
    assert changed(before, model) == {"head", "backbone.layers.3", "backbone.layers.2"}
    again = Classifier()
    _randomise(again, seed=3, blocks=2)  # seeded: the same random function
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True)
    )


def config(scope: str, adaptation: str, layers: int = 2) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        evaluation=types.SimpleNamespace(swap_randomise=scope),
        train=types.SimpleNamespace(adaptation=adaptation, partial_layers=layers),
    )


def test_tuned_scope_counts_the_tuned_blocks_and_needs_partial_training() -> None:
    assert randomised_blocks(config("head", "head_only")) == 0
    assert randomised_blocks(config("tuned", "partial", 3)) == 3
    with pytest.raises(XursError, match=r"evaluation.swap_randomise='tuned'.*train.adaptation='head_only'"):
        randomised_blocks(config("tuned", "head_only"))


def test_an_unknown_scope_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"evaluation.swap_randomise='blocks': must be one of"):
        EvaluationConfig(swap_randomise="blocks")


def test_none_scope_explains_the_trained_runs_only() -> None:
    """``evaluation.swap_randomise: none`` (a sweep's seed whose sanity runs another seed carries): the study
    explains A, B and C and no randomised model; every other scope explains all six runs."""
    assert list(study_runs("none")) == ["A", "B", "C"]
    randomised = ["A_random", "B_random", "C_random"]
    assert list(study_runs("head")) == list(study_runs("tuned")) == ["A", "B", "C", *randomised]
    assert randomised_blocks(config("none", "partial", 3)) == 0


def test_the_headline_without_randomised_runs_says_so() -> None:
    """No randomised study: the headline's randomised accuracy is None, the trained figures as they are."""
    trained = {"swap_accuracy": 0.75, "swap_ci_low": 0.5, "swap_ci_high": 0.9}
    trained |= {"share_difference": 0.2, "share_ci_low": 0.1, "share_ci_high": 0.3}
    runs = {name: pd.DataFrame({"residual": [0.01, -0.02]}) for name in ("A", "B")}
    out = headline({"trained": trained}, runs)
    assert out["randomised_swap_accuracy"] is None
    assert out["swap_accuracy"] == 0.75
    assert out["R_max"] == 0.02
    with_randomised = headline({"trained": trained, "randomised": {**trained, "swap_accuracy": 0.5}}, runs)
    assert with_randomised["randomised_swap_accuracy"] == 0.5
