"""One call for every method (``attribution/methods/``): each registered method, the paper's estimators
included, explains an arbitrary masses function of the embeddings through ``method_for(cfg).attribute(
Problem)`` with a batch of references, and its answer from the batch equals the mean of its answers from one
reference at a time, computed here call by call (App. B.2); the swap study reaches every method, the rerun
estimator included, through that call alone, and no caller branches on a method's kind."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from xurs_pipeline.attribution.config import METHODS, PATH_METHODS, AttributionConfig
from xurs_pipeline.attribution.methods import REGISTRY, AttributionMethod, Problem, method_for
from xurs_pipeline.attribution.plan import eg_plan
from xurs_pipeline.credal import N_MASSES
from xurs_pipeline.evaluation.swap.readings import ProbeSet, method_configs, model_readings
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead
from xurs_pipeline.models.tiny import build_tiny_llama

SEQ, HIDDEN, REFS = 6, 4, 3
ROOT = Path(__file__).resolve().parents[2]
# small budgets, loose tolerances: the quadrature estimators stop after their first pass on every reference
SETTINGS: dict[str, dict] = {
    "eg": {"n_samples": 24},
    "ig": {"ig_points": 6},
    "kronrod": {"kronrod_tolerance": 0.99, "kronrod_max_evals": 600, "refs_per_collection": REFS},
    "certified": {
        "certified_tolerance": 0.99,
        "certified_vector_tolerance": 0.99,
        "certified_max_evals": 600,
    },
    "occlusion_token": {"replacement": "reference"},
    "occlusion_span": {"replacement": "reference", "span_tokens": 2},
    "shapley_span": {"replacement": "reference", "span_tokens": 2},
    "layer_ig": {"layer_ig_steps": 4},
    "sequential_ig": {"sequential_ig_steps": 3, "replacement": "reference"},
}
# the methods whose rule reads random points on each path (eg draws them, certified shifts its lattice per
# reference): their batch and single calls agree where every rule is exact, a function linear along paths
RANDOM_POINTS = ("eg", "certified")


class Masses(nn.Module):
    """An arbitrary masses function (b, L, d) -> (b, 15), causal in nothing: ``nonlinear`` a softmax of a
    mixing layer (with a block, ``layer_ig``'s layer), else masses linear in the embeddings (their sum 1)."""

    def __init__(self, nonlinear: bool) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.nonlinear = nonlinear
        self.blocks = nn.ModuleList([nn.Linear(HIDDEN, HIDDEN).double()])
        self.mix = torch.randn(SEQ * HIDDEN, N_MASSES, generator=g, dtype=torch.float64) * 0.3
        self.mix -= self.mix.mean(1, keepdim=True)  # each input direction moves the masses' sum by 0

    def forward(self, embeds: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if not self.nonlinear:
            return 1.0 / N_MASSES + 0.01 * embeds.flatten(1) @ self.mix
        hidden = torch.tanh(self.blocks[0](embeds))
        return torch.softmax(hidden.flatten(1) @ self.mix, dim=-1)


def problem(nonlinear: bool) -> Problem:
    g = torch.Generator().manual_seed(5)
    x = torch.randn(1, SEQ, HIDDEN, generator=g, dtype=torch.float64)
    refs = torch.randn(REFS, SEQ, HIDDEN, generator=g, dtype=torch.float64)
    refs[:, 0] = x[0, 0]  # every reference shares the first row with the input
    model = Masses(nonlinear)
    spans = ((0, 1), (2, 3), (4, 5))
    return Problem(
        model, x, target=1, references=refs, spans=spans, layer=model.blocks[0], reuse_prefix=False
    )


def single(p: Problem, j: int) -> Problem:
    """``p`` with its j-th reference alone."""
    assert p.references is not None
    return Problem(
        p.masses,
        p.embeds,
        p.target,
        references=p.references[j : j + 1],
        spans=p.spans,
        layer=p.layer,
        reuse_prefix=False,
    )


@pytest.mark.parametrize("name", METHODS)
def test_every_method_answers_one_call_and_averages_its_references(name) -> None:
    """Each method on the same function, input and batch of references: finite scores per token and its
    cost; the batch's signed scores equal the mean of the single-reference calls' (EG: weighted by how
    often its seeded plan draws each reference, Eq. 3), their cost the sum (EG, kronrod, certified: one
    collection, one input and reference evaluation each)."""
    p = problem(nonlinear=name not in RANDOM_POINTS)
    method = method_for(AttributionConfig(method=name, **SETTINGS.get(name, {})))
    batch = method.attribute(p)
    assert batch.signed.shape == batch.magnitude.shape == (SEQ,)
    assert np.isfinite(batch.signed).all()
    assert batch.forwards + batch.grad_evals > 0
    singles = [method.attribute(single(p, j)) for j in range(REFS)]
    weights = np.full(REFS, 1.0 / REFS)
    if name == "eg":
        draws = SETTINGS["eg"]["n_samples"]
        weights = eg_plan(REFS, draws, AttributionConfig().seed).draws(REFS) / draws
    expected = np.sum([w * s.signed for w, s in zip(weights, singles, strict=True)], axis=0)
    np.testing.assert_allclose(batch.signed, expected, rtol=1e-5, atol=1e-7)
    if name not in ("grad_l2", "grad_x_input"):  # the gradients at the input read no reference
        assert not np.allclose(singles[0].signed, singles[1].signed)
    grads = sum(s.grad_evals for s in singles)
    assert batch.grad_evals == (SETTINGS["eg"]["n_samples"] if name == "eg" else grads)
    assert batch.forwards == sum(s.forwards for s in singles) - (REFS - 1 if name in PATH_METHODS else 0)


def test_a_method_reads_only_its_settings() -> None:
    """A method is built from its own settings: another method's key leaves it unchanged, its own does not."""
    kronrod = method_for(AttributionConfig(method="kronrod"))
    assert method_for(AttributionConfig(method="kronrod", n_samples=7)).settings == kronrod.settings
    tighter = AttributionConfig(method="kronrod", kronrod_tolerance=0.001)
    assert method_for(tighter).settings != kronrod.settings
    assert all(REGISTRY[m].configured(AttributionConfig(method=m)).name == m for m in METHODS)


@pytest.fixture(scope="module")
def classifier() -> RandomSetClassifier:
    backbone = build_tiny_llama(64, hidden_size=16, num_layers=2, num_heads=2, seed=0).model
    return RandomSetClassifier(backbone, RandomSetHead(16, "belief14", seed=1)).eval()


def test_the_swap_study_reads_every_entry_through_the_one_call(classifier, monkeypatch) -> None:
    """Every reading of ``model_readings``, the paper's estimator rerun from a set included, is the result of
    one ``attribute`` call of the entry's method on the probe with the entry's references: a reading that
    reached a method by another path (a kind branch, the engine called directly) is missing here."""
    rng = np.random.default_rng(0)
    ids = {f"p{i}": [1, *rng.integers(3, 64, 11).tolist()] for i in range(2)}
    sets = {"train:2": {k: rng.integers(3, 64, (2, 12)) for k in ids}, "zero": dict.fromkeys(ids)}
    first = {k: rng.integers(3, 64, (2, 12)) for k in ids}
    probes = ProbeSet(
        ids, dict.fromkeys(ids, ([2, 3], [7])), dict.fromkeys(ids, 1), first, {}, reference_sets=sets
    )
    entries = ["occlusion_token", "grad_l2", "paper@references=train:2", "paper@references=zero"]
    run = AttributionConfig(method="ig", ig_points=4, refs_per_collection=2)
    calls: list[tuple[str, int, int]] = []
    original = AttributionMethod.attribute

    def recorded(self: AttributionMethod, p: Problem):  # type: ignore[no-untyped-def]
        scores = original(self, p)
        calls.append((self.name, 0 if p.references is None else len(p.references), scores.grad_evals))
        return scores

    monkeypatch.setattr(AttributionMethod, "attribute", recorded)
    frame = model_readings(classifier, "A", probes, method_configs(entries, 4, run))
    expected = [
        (m, n) for _ in ids for m, n in (("occlusion_token", 1), ("grad_l2", 1), ("ig", 2), ("ig", 1))
    ]
    assert [(m, n) for m, n, _ in calls] == expected
    assert frame["grad_evals"].tolist() == [g for _, _, g in calls]


def method_kind_branches(source: str) -> list[str]:
    """The ``isinstance`` calls of ``source`` whose class names an attribution method, and its imports of
    the engine's question loop or estimators (a second path to them)."""
    classes = {cls.__name__ for cls in REGISTRY.values()}
    classes |= {"AttributionMethod", "TokenMethod", "PathMethod", "GradientMethod"}
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "isinstance"
            and len(node.args) == 2
        ):
            names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            found += [f"isinstance(..., {n})" for n in sorted(names & classes)]
        if isinstance(node, ast.ImportFrom) and node.module in ENGINE:
            names = {alias.name for alias in node.names}
            reaching = ENGINE[node.module] or names
            found += [f"from {node.module} import {n}" for n in sorted(names & reaching)]
    return found


ENGINE = {  # what a caller would import to reach an estimator around the call (empty: anything)
    "xurs_pipeline.attribution.question": {"attribute_paths", "Question", "ReferencePool"},
    "xurs_pipeline.attribution.estimators": set(),
}
CALLERS = (
    "xurs_pipeline/evaluation/swap/readings.py",
    "xurs_pipeline/evaluation/swap/estimator_readings.py",
    "xurs_pipeline/explain.py",
    "xurs_pipeline/commands/explain.py",
)


@pytest.mark.parametrize("path", CALLERS)
def test_no_caller_branches_on_a_method_kind(path) -> None:
    assert method_kind_branches((ROOT / path).read_text()) == []


def test_the_kind_check_finds_a_planted_branch() -> None:
    planted = "if isinstance(method, TokenMethod):\n    pass\n"
    assert method_kind_branches(planted) == ["isinstance(..., TokenMethod)"]
    engine = "from xurs_pipeline.attribution.question import NonFiniteError, attribute_paths\n"
    assert method_kind_branches(engine) == ["from xurs_pipeline.attribution.question import attribute_paths"]
    assert method_kind_branches("from xurs_pipeline.attribution.question import NonFiniteError\n") == []
