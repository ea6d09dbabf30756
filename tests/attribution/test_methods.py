"""The attribution methods behind one interface (attribution/methods/): each token method equals an
independent computation of what it claims (autograd, a brute-force replacement loop, Shapley by enumerating
every order, a hand-computed IG through a block whose output is mixed across positions, captum), counts its
cost, and the config refuses a bad method name or another method's key by name."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from captum.attr import ShapleyValues
from torch import nn

from xurs_pipeline.attribution.config import METHODS, SHAPLEY_MAX_SPANS, AttributionConfig
from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.methods import REGISTRY, Problem, TokenMethod, method_for
from xurs_pipeline.attribution.methods.gradient import middle_block
from xurs_pipeline.attribution.methods.token_question import span_width, spans_of
from xurs_pipeline.credal import credal_width

SEQ, HIDDEN = 7, 4
SPANS = ((0, 1), (2, 3, 4), (5, 6))


class Toy(nn.Module):
    """Masses (b, 15) of embeds (b, L, d) in float64: a block per position, its output mixed causally
    across positions (running mean), the last position read by a softmax head."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList([nn.Linear(HIDDEN, HIDDEN).double()])
        self.head = nn.Linear(HIDDEN, 15).double()

    def forward(self, inputs_embeds, attention_mask, position_ids):
        h = torch.tanh(self.blocks[0](inputs_embeds))  # (b, L, d): the layer layer_ig attributes to
        return SimpleNamespace(masses=torch.softmax(self.head(self.after_block(h)), -1))

    def after_block(self, h: torch.Tensor) -> torch.Tensor:
        counts = torch.arange(1, h.shape[1] + 1, dtype=h.dtype)[None, :, None]
        return (h.cumsum(1) / counts)[:, -1] * 3.0  # (b, d): every position reaches the head


@pytest.fixture(scope="module")
def toy() -> tuple[Toy, Problem]:
    model = Toy()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1, SEQ, HIDDEN, generator=gen, dtype=torch.float64)
    ref = torch.randn(1, SEQ, HIDDEN, generator=gen, dtype=torch.float64) * 0.3
    problem = Problem(
        classifier_mass_fn(model),
        x,
        target=2,
        references=ref,
        spans=SPANS,
        layer=model.blocks[0],
        batch_size=3,
    )
    return model, problem


def _width(model: Toy, x: torch.Tensor, target: int = 2) -> torch.Tensor:
    """W_c of embeds (b, L, d) straight from the model and credal (b,)."""
    return credal_width(model(x, None, None).masses)[:, target]


def _value(model: Toy, x: torch.Tensor) -> float:
    with torch.no_grad():
        return float(_width(model, x))


def _method(name: str, **keys) -> TokenMethod:
    method = method_for(AttributionConfig(method=name, **keys))
    assert isinstance(method, TokenMethod)
    return method


def test_the_registry_holds_every_configurable_method_in_order() -> None:
    assert tuple(REGISTRY) == METHODS
    assert all(REGISTRY[m].name == m for m in METHODS)


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ({"method": "occlusion"}, "attribution.method='occlusion'"),
        ({"method": "grad_l2", "replacement": "mean"}, "attribution.replacement='mean' is a key of"),
        ({"method": "layer_ig", "span_tokens": 4}, "attribution.span_tokens=4 is a key of"),
        ({"method": "occlusion_token", "layer_ig_steps": 8}, "attribution.layer_ig_steps=8 is a key of"),
        ({"method": "eg", "replacement": "reference"}, "attribution.replacement='reference'"),
        ({"method": "occlusion_token", "replacement": "blank"}, "attribution.replacement='blank'"),
        ({"method": "grad_l2", "route": "answer_set"}, "attribution.route='answer_set'"),
    ],
)
def test_a_bad_method_or_another_methods_key_is_refused_by_name(keys: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named.replace("(", r"\(")) as info:
        AttributionConfig(**keys)
    assert "\n" not in str(info.value)


def test_a_methods_own_keys_are_accepted() -> None:
    assert AttributionConfig(method="occlusion_token", replacement="mean").replacement == "mean"
    assert AttributionConfig(method="shapley_span", span_tokens=4, replacement="reference").span_tokens == 4
    assert AttributionConfig(method="layer_ig", layer_ig_steps=8).gradient_budget().per_question == 8


def test_gradient_methods_equal_autograd(toy) -> None:
    model, problem = toy
    x = problem.embeds.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(_width(model, x).sum(), x)
    l2 = _method("grad_l2").attribute(problem)
    np.testing.assert_allclose(l2.magnitude, grad[0].norm(dim=-1).numpy(), rtol=1e-12)
    gxi = _method("grad_x_input").attribute(problem)
    np.testing.assert_allclose(gxi.signed, (x * grad)[0].sum(-1).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gxi.magnitude, np.abs(gxi.signed))
    assert (l2.grad_evals, l2.forwards, gxi.grad_evals) == (1, 0, 1)


@pytest.mark.parametrize("replacement", ["zero", "mean", "reference"])
def test_occlusion_per_token_is_a_brute_force_replacement_loop(toy, replacement: str) -> None:
    model, problem = toy
    x = problem.embeds
    rows = {
        "zero": torch.zeros_like(x[0]),
        "mean": x[0].mean(0).expand_as(x[0]),
        "reference": problem.reference[0],
    }
    expected = []
    for i in range(SEQ):
        changed = x.clone()
        changed[0, i] = rows[replacement][i]
        expected.append(_value(model, x) - _value(model, changed))
    scores = _method("occlusion_token", replacement=replacement).attribute(problem)
    np.testing.assert_allclose(scores.signed, expected, rtol=1e-10, atol=1e-15)
    assert (scores.forwards, scores.grad_evals) == (SEQ + 1, 0)
    if replacement != "zero":  # the replacement is used: zeroing gives other scores
        assert not np.allclose(scores.signed, _method("occlusion_token").attribute(problem).signed)


def test_occlusion_per_span_scores_every_token_of_a_span_with_its_spans_change(toy) -> None:
    model, problem = toy
    x = problem.embeds
    scores = _method("occlusion_span").attribute(problem)
    for span, value in zip(SPANS, scores.span_values, strict=True):
        changed = x.clone()
        changed[0, list(span)] = 0.0
        assert value == pytest.approx(_value(model, x) - _value(model, changed), rel=1e-10)
        assert set(scores.signed[list(span)]) == {value}
    assert scores.forwards == len(SPANS) + 1


def _shapley_by_orders(model: Toy, x: torch.Tensor) -> np.ndarray:
    """Every order of the players: each player's mean marginal contribution when it joins (absent: zero)."""
    n, phi = len(SPANS), np.zeros(len(SPANS))

    def v(present: set[int]) -> float:
        changed = x.clone()
        for j in set(range(n)) - present:
            changed[0, list(SPANS[j])] = 0.0
        return _value(model, changed)

    orders = list(itertools.permutations(range(n)))
    for order in orders:
        present: set[int] = set()
        for player in order:
            phi[player] += v(present | {player}) - v(present)
            present.add(player)
    return phi / math.factorial(n)


def test_span_shapley_equals_shapley_by_enumeration_and_captum(toy) -> None:
    model, problem = toy
    x = problem.embeds
    scores = _method("shapley_span").attribute(problem)
    np.testing.assert_allclose(scores.span_values, _shapley_by_orders(model, x), rtol=1e-10)
    mask = torch.zeros(1, SEQ, 1, dtype=torch.long)
    for k, span in enumerate(SPANS):
        mask[0, list(span)] = k
    captum = ShapleyValues(lambda e: _width(model, e)).attribute(
        x, baselines=0.0, feature_mask=mask.expand_as(x).contiguous()
    )
    # captum accumulates its marginal contributions in float32: float32's tolerance
    np.testing.assert_allclose(scores.span_values, [float(captum[0, s[0], 0]) for s in SPANS], rtol=1e-6)
    none = x.clone() * 0.0
    assert sum(scores.span_values) == pytest.approx(
        float(_width(model, x) - _width(model, none))
    )  # efficiency
    assert scores.forwards == 2 ** len(SPANS)


def test_span_shapley_refuses_more_spans_than_it_can_enumerate(toy) -> None:
    _, problem = toy
    many = Problem(problem.masses, torch.zeros(1, 13, HIDDEN, dtype=torch.float64), 0, spans=spans_of(13, 1))
    with pytest.raises(ValueError, match=r"attribution\.span_tokens=1: 13 spans"):
        _method("shapley_span", span_tokens=1).attribute(many)


@pytest.mark.parametrize(
    ("method", "span_tokens", "length", "width"),
    [
        ("shapley_span", 16, 12 * 16, 16),
        ("shapley_span", 16, 12 * 16 + 1, 17),
        ("shapley_span", 16, 340, 29),
        ("shapley_span", 1, 13, 2),
        ("occlusion_span", 16, 340, 16),
    ],
)
def test_shapley_span_widens_its_spans_to_at_most_twelve(method, span_tokens, length, width) -> None:
    """With its default 16 positions a span, shapley_span refused every prompt over 192 tokens (the shipped
    questions have 20 spans or more): its spans widen to ceil(L / 12) positions there, never narrow, and
    cover the prompt in at most 12 spans; occlusion_span, which enumerates nothing, keeps span_tokens."""
    cfg = AttributionConfig(method=method, span_tokens=span_tokens)
    assert span_width(cfg, length) == width
    spans = spans_of(length, width)
    assert [p for span in spans for p in span] == list(range(length))
    assert len(spans) <= SHAPLEY_MAX_SPANS or method != "shapley_span"


def test_layer_ig_equals_ig_computed_by_hand_through_the_block(toy) -> None:
    """IG of W with respect to the block's output h, from h(B) to h(X) (Gauss-Legendre, captum's rule),
    the block's output mixed across positions after it; complete to the quadrature's accuracy."""
    model, problem = toy
    x, ref, steps = problem.embeds, problem.reference, 16
    h_x, h_b = (model.blocks[0](e) for e in (x, ref))  # the block's output, before the tanh
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    total = torch.zeros_like(h_x)
    for alpha, w in zip((nodes + 1) / 2, weights / 2, strict=True):
        h = (h_b + alpha * (h_x - h_b)).requires_grad_(True)
        width = credal_width(torch.softmax(model.head(model.after_block(torch.tanh(h))), -1))[:, 2]
        total += w * torch.autograd.grad(width.sum(), h)[0]
    by_hand = ((h_x - h_b) * total)[0].sum(-1).detach().numpy()
    scores = _method("layer_ig", layer_ig_steps=steps).attribute(problem)
    np.testing.assert_allclose(scores.signed, by_hand, rtol=1e-8, atol=1e-14)
    gap = _value(model, x) - _value(model, ref)
    assert scores.residual == pytest.approx(abs(by_hand.sum() - gap), abs=1e-10)
    assert scores.residual < 1e-3 * abs(gap)
    assert (scores.grad_evals, scores.forwards) == (steps, 2 + 2)  # captum's two layer reads + the ends


def test_layer_ig_reads_the_middle_block() -> None:
    model = nn.Module()
    model.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(5)])
    assert middle_block(model) is model.blocks[2]


def test_only_methods_that_read_a_reference_load_training_prompts_and_a_token_method_loads_one() -> None:
    reads = {m: AttributionConfig(method=m).reads_training_references for m in METHODS}
    assert reads == {m: m in ("eg", "ig", "kronrod", "certified", "layer_ig") for m in METHODS}
    assert AttributionConfig(method="occlusion_token", replacement="reference").reads_training_references
    assert not AttributionConfig(
        method="layer_ig", reference="zero", refs_per_collection=1
    ).reads_training_references
    assert AttributionConfig(method="layer_ig").pool_shape == (1, 1)
    assert AttributionConfig(method="eg", refs_per_collection=8, n_collections=2).pool_shape == (8, 2)


def _gradient(model: Toy, x: torch.Tensor) -> torch.Tensor:
    """dW/dx (L, d) by autograd, the prompt (1, L, d)."""
    x = x.clone().requires_grad_(True)
    return torch.autograd.grad(_width(model, x).sum(), x)[0][0]


@pytest.mark.parametrize("reduction", ["l2", "abs_sum"])
def test_every_gradient_method_reduces_over_hidden_as_configured(toy, reduction: str) -> None:
    """grad_l2 and grad_x_input under each reduction against autograd reduced by hand (numpy); the signed
    score stays the method's own, and ``own`` keeps the shipped reduction of each."""
    model, problem = toy
    grad = _gradient(model, problem.embeds).numpy()
    by_hand = {"l2": lambda c: np.sqrt((c**2).sum(-1)), "abs_sum": lambda c: np.abs(c.sum(-1))}[reduction]
    l2 = _method("grad_l2", reduction=reduction).attribute(problem)
    np.testing.assert_allclose(l2.magnitude, by_hand(grad), rtol=1e-12)
    np.testing.assert_allclose(l2.signed, np.sqrt((grad**2).sum(-1)), rtol=1e-12)
    gxi = _method("grad_x_input", reduction=reduction).attribute(problem)
    coords = problem.embeds[0].numpy() * grad
    np.testing.assert_allclose(gxi.magnitude, by_hand(coords), rtol=1e-12)
    np.testing.assert_allclose(gxi.signed, coords.sum(-1), rtol=1e-12)
    own = {"grad_l2": "l2", "grad_x_input": "abs_sum", "layer_ig": "abs_sum", "sequential_ig": "abs_sum"}
    for name, shipped in own.items():
        default = _method(name, **({"sequential_ig_steps": 2} if name == "sequential_ig" else {}))
        explicit = _method(
            name, reduction=shipped, **({"sequential_ig_steps": 2} if name == "sequential_ig" else {})
        )
        shipped_magnitude = explicit.attribute(problem).magnitude
        np.testing.assert_array_equal(default.attribute(problem).magnitude, shipped_magnitude)
    other = {"l2": "abs_sum", "abs_sum": "l2"}[reduction]
    other_magnitude = _method("grad_x_input", reduction=other).attribute(problem).magnitude
    assert not np.allclose(other_magnitude, gxi.magnitude)


def test_layer_ig_reduces_its_layer_coordinates_by_l2_when_asked(toy) -> None:
    _, problem = toy
    own = _method("layer_ig", layer_ig_steps=8).attribute(problem)
    l2 = _method("layer_ig", layer_ig_steps=8, reduction="l2").attribute(problem)
    np.testing.assert_allclose(l2.magnitude, own.coords.double().norm(dim=-1).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(l2.signed, own.signed)
    assert not np.allclose(l2.magnitude, own.magnitude)


def test_the_paper_estimators_record_their_magnitude_by_the_configured_reduction() -> None:
    assert AttributionConfig(method="kronrod").token_reduction == "l2"
    assert AttributionConfig(method="eg", reduction="abs_sum").token_reduction == "abs_sum"
    assert AttributionConfig(method="grad_x_input").token_reduction == "abs_sum"


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ({"method": "grad_l2", "reduction": "max"}, "attribution.reduction='max'"),
        ({"method": "occlusion_token", "reduction": "l2"}, "attribution.reduction='l2' is a key of"),
        ({"method": "layer_ig", "sequential_ig_steps": 4}, "attribution.sequential_ig_steps=4 is a key of"),
        ({"method": "sequential_ig", "sequential_ig_steps": 0}, "attribution.sequential_ig_steps=0"),
    ],
)
def test_a_bad_reduction_or_sequential_ig_key_is_refused_by_name(keys: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named) as info:
        AttributionConfig(**keys)
    assert "\n" not in str(info.value)


def _row_replaced(x: torch.Tensor, i: int, row: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    out[:, i] = row
    return out


@pytest.mark.parametrize("replacement", ["zero", "reference"])
def test_sequential_ig_is_ig_of_each_token_alone_by_hand_and_by_captum(toy, replacement: str) -> None:
    """Each token's IG from its baseline row with every other row at the input, by a hand loop over
    captum's Gauss-Legendre rule and by captum's IntegratedGradients on the one-row function; complete per
    token to the quadrature's accuracy (F(X) - F(X with row i at its baseline))."""
    from captum.attr import IntegratedGradients

    model, problem = toy
    x, steps = problem.embeds, 24
    base = torch.zeros_like(x[0]) if replacement == "zero" else problem.reference[0]
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    by_hand, by_captum, gaps = [], [], []
    for i in range(SEQ):
        total = torch.zeros_like(x[0, i])
        for alpha, w in zip((nodes + 1) / 2, weights / 2, strict=True):
            row = (base[i] + alpha * (x[0, i] - base[i])).requires_grad_(True)
            total += w * torch.autograd.grad(_width(model, _row_replaced(x, i, row)).sum(), row)[0]
        by_hand.append(float(((x[0, i] - base[i]) * total).sum()))
        one_row = IntegratedGradients(
            lambda r, i=i: _width(
                model,
                torch.cat(
                    [x[:, :i].expand(len(r), -1, -1), r[:, None], x[:, i + 1 :].expand(len(r), -1, -1)], 1
                ),
            )
        )
        by_captum.append(float(one_row.attribute(x[:, i], base[i : i + 1], n_steps=steps).sum()))
        gaps.append(_value(model, x) - _value(model, _row_replaced(x, i, base[i])))
    scores = _method("sequential_ig", sequential_ig_steps=steps, replacement=replacement).attribute(problem)
    np.testing.assert_allclose(scores.signed, by_hand, rtol=1e-9, atol=1e-15)
    # captum's Gauss-Legendre points and weights pass through float32 (differences of ~5e-9 relative)
    np.testing.assert_allclose(scores.signed, by_captum, rtol=1e-7, atol=1e-15)
    np.testing.assert_allclose(scores.magnitude, np.abs(by_hand), rtol=1e-9, atol=1e-15)
    assert scores.residual == pytest.approx(np.abs(np.array(by_hand) - gaps).max(), abs=1e-12)
    assert scores.residual < 1e-6 * np.abs(gaps).max()
    assert (scores.grad_evals, scores.forwards) == (SEQ * steps, SEQ + 1)
    # the path of one token with the others at their baselines (plain IG) is another attribution
    full = [_value(model, x) - _value(model, base[None])]
    assert not np.isclose(sum(by_hand), full[0], rtol=1e-3)


def test_sequential_ig_with_one_point_is_the_gradient_at_the_midpoint(toy) -> None:
    """One Gauss-Legendre point: e_i = (x_i - b_i) . dF/dx_i at the row's midpoint (zero baseline)."""
    model, problem = toy
    x = problem.embeds
    expected = [
        float((x[0, i] * _gradient(model, _row_replaced(x, i, x[0, i] / 2))[i]).sum()) for i in range(SEQ)
    ]
    scores = _method("sequential_ig", sequential_ig_steps=1).attribute(problem)
    np.testing.assert_allclose(scores.signed, expected, rtol=1e-10)
    assert (
        AttributionConfig(method="sequential_ig", sequential_ig_steps=4)
        .gradient_budget(AttributionConfig(method="sequential_ig").pieces_per_reference(SEQ))
        .per_question
        == SEQ * 4
    )


@pytest.mark.parametrize(
    ("name", "keys"), [("occlusion_token", {}), ("sequential_ig", {"sequential_ig_steps": 3})]
)
def test_a_per_token_method_scores_only_the_read_positions_at_their_cost(toy, name: str, keys) -> None:
    """With ``Problem.read`` a per-token method scores those positions exactly as on the whole prompt,
    leaves the others NaN and pays only for the positions it scores (read + 1 forwards; read x steps
    gradients); a method that scores every token at once is unchanged."""
    _, problem = toy
    read = (1, 4, 5)
    full = _method(name, **keys).attribute(problem)
    part = _method(name, **keys).attribute(replace(problem, read=read))
    np.testing.assert_allclose(part.signed[list(read)], full.signed[list(read)], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(part.magnitude[list(read)], full.magnitude[list(read)], rtol=1e-12)
    unread = [i for i in range(SEQ) if i not in read]
    assert np.isnan(part.signed[unread]).all()
    assert np.isnan(part.magnitude[unread]).all()
    steps = keys.get("sequential_ig_steps", 0)
    assert (part.forwards, part.grad_evals) == (len(read) + 1, len(read) * steps)
    assert (full.forwards, full.grad_evals) == (SEQ + 1, SEQ * steps)
    once = _method("grad_x_input").attribute(replace(problem, read=read))
    np.testing.assert_array_equal(once.signed, _method("grad_x_input").attribute(problem).signed)


@pytest.mark.parametrize("read", [(), (0, 0), (SEQ,), (-1,)])
def test_read_positions_outside_the_prompt_or_repeated_are_refused(toy, read) -> None:
    _, problem = toy
    with pytest.raises(ValueError, match="read positions"):
        replace(problem, read=read)
