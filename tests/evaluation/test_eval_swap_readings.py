"""The swap study's readings (evaluation/swap/readings.py): every compared method comes through the
attribution interface and reads the cues as the study's own captum dispatch did before it
(``evaluation/swap_methods.py`` up to commit 5e17eba, rewritten here as the independent path), on a tiny
causal classifier; the readings rank cues as documented, and the method groups partition
``evaluation.swap_methods``."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from captum.attr import FeatureAblation, InputXGradient, LayerIntegratedGradients, Saliency, ShapleyValues

from xurs_pipeline.attribution.config import TOKEN_METHODS, AttributionConfig
from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.methods.base import AttributionMethod
from xurs_pipeline.attribution.methods.gradient import middle_block
from xurs_pipeline.attribution.targets import width_target
from xurs_pipeline.attribution.variants import SwapVariant, reduction_twins, swap_variant
from xurs_pipeline.evaluation.config import SWAP_CHOICES, SWAP_METHODS, SWAP_OPT_IN, EvaluationConfig
from xurs_pipeline.evaluation.swap.readings import (
    NULL_METHODS,
    RUN_METHOD,
    CueReading,
    ProbeSet,
    fixed_readings,
    method_configs,
    model_readings,
    token_reading,
)
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead
from xurs_pipeline.models.tiny import build_tiny_llama

SEQ, VOCAB, HIDDEN, STEPS = 24, 64, 32, 8
CUES = ([4, 5, 6], [13, 14])


@pytest.fixture(scope="module")
def model() -> RandomSetClassifier:
    backbone = build_tiny_llama(VOCAB, hidden_size=HIDDEN, num_layers=3, num_heads=4, seed=0).model
    classifier = RandomSetClassifier(backbone, RandomSetHead(HIDDEN, "belief14", seed=1))
    with torch.no_grad():
        classifier.head.net.bias.copy_(torch.tensor([-3.0] * 4 + [-1.2] * 6 + [0.3] * 4))
    return classifier.eval()


@pytest.fixture(scope="module")
def probes() -> ProbeSet:
    rng = np.random.default_rng(0)
    ids = {f"p{i}": [1, *rng.integers(3, VOCAB, SEQ - 1).tolist()] for i in range(3)}
    return ProbeSet(
        ids=ids,
        cues=dict.fromkeys(ids, CUES),
        labels={k: i % 4 for i, k in enumerate(ids)},
        references={k: rng.integers(3, VOCAB, (2, SEQ)) for k in ids},
        input_only={k: rng.random(SEQ) for k in ids},
    )


def _before(method: str, model: RandomSetClassifier, probes: ProbeSet, rid: str) -> CueReading:
    """The study's reading before the interface: captum on ``x -> W_c(x)``, as swap_methods.py ran it."""
    embed = model.backbone.get_input_embeddings()
    with torch.no_grad():
        x = embed(torch.tensor([probes.ids[rid]]))
        reference = embed(torch.as_tensor(probes.references[rid][:1]))
    masses, c, rows = classifier_mass_fn(model), probes.labels[rid], [0]

    def f(e: torch.Tensor) -> torch.Tensor:
        rows[0] += e.shape[0]
        ones = torch.ones(e.shape[:2], dtype=torch.long)
        return width_target(
            masses(e, ones, torch.arange(e.shape[1]).expand(e.shape[:2])), torch.full((len(e),), c)
        )

    x = x.detach().requires_grad_(method in ("grad_l2", "grad_x_input", "layer_ig"))
    if method in ("occlusion_span", "shapley_span"):
        mask = torch.full((1, SEQ, 1), 2, dtype=torch.long)
        for k, cue in enumerate(CUES):
            mask[0, cue, 0] = k
        algorithm = FeatureAblation(f) if method == "occlusion_span" else ShapleyValues(f)
        values = algorithm.attribute(
            x, baselines=0.0, feature_mask=mask.expand_as(x).contiguous(), perturbations_per_eval=8
        )
        span = tuple(abs(float(values[0, cue[0], 0])) for cue in CUES)
        return CueReading(span, span, rows[0])  # type: ignore[arg-type]
    if method == "grad_l2":
        token = Saliency(f).attribute(x, abs=False).norm(dim=-1)[0]
    elif method == "grad_x_input":
        token = InputXGradient(f).attribute(x).sum(-1)[0]
    elif method == "occlusion_token":
        ids = torch.arange(SEQ).reshape(1, SEQ, 1).expand_as(x).contiguous()
        token = FeatureAblation(f).attribute(x, baselines=0.0, feature_mask=ids, perturbations_per_eval=SEQ)[
            0, :, 0
        ]
    else:
        lig = LayerIntegratedGradients(f, middle_block(model))
        token = lig.attribute(x, baselines=reference, n_steps=STEPS, internal_batch_size=STEPS).sum(-1)[0]
    return token_reading(token.detach().double().numpy(), CUES, rows[0])


# What the interface changed in the cost column: Shapley evaluates each of the 2^3 coalitions once (captum's
# ShapleyValues 1 + 3! x 3), layer IG two more forwards for its completeness residual, zero-masking token by
# token only the cues' tokens (the positions the study reads) and the unmasked prompt.
EVALS = {"shapley_span": 2**3, "layer_ig": STEPS + 2 + 2}


def _evals(method: str, probes, rid: str, before: int) -> int:
    if method == "occlusion_token":
        return sum(len(cue) for cue in probes.cues[rid]) + 1
    return EVALS.get(method, before)


def test_every_token_method_reads_the_cues_as_the_study_did_before_the_interface(model, probes) -> None:
    shipped = [m for m in TOKEN_METHODS if m in SWAP_METHODS]  # sequential_ig: tests/attribution
    frame = model_readings(model, "A", probes, method_configs(shipped, STEPS)).set_index(
        ["method", "record_id"]
    )
    for method in shipped:
        for rid in probes.ids:
            now, before = frame.loc[(method, rid)], _before(method, model, probes, rid)
            assert now["top"] == before.top, (method, rid)
            # float32 widths (~1): the prefix-cached occlusion and captum's batches differ by rounding
            assert (now["best_1"], now["best_2"]) == pytest.approx(before.best, rel=1e-4, abs=2e-6)
            assert (now["total_1"], now["total_2"]) == pytest.approx(before.total, rel=1e-4, abs=2e-6)
            assert now["evals"] == _evals(method, probes, rid, before.evals), method


TWINS = [
    "grad_x_input",
    "grad_x_input@reduction=l2",
    "layer_ig@references=zero",
    "layer_ig@references=zero,reduction=l2",
    "layer_ig",
]


def test_reduction_twins_are_computed_once_and_read_as_each_computed_alone(
    model, probes, monkeypatch
) -> None:
    """Entries that differ only in ``reduction`` share one computation per probe; each reads it with its
    own reduction, as it reads its own computation alone, and carries the computation's cost."""
    methods = method_configs(TWINS, STEPS)
    probes = ProbeSet(**{**probes.__dict__, "reference_sets": {"zero": dict.fromkeys(probes.ids)}})
    alone = pd.concat([model_readings(model, "A", probes, {e: methods[e]}) for e in TWINS])
    calls = []
    original = AttributionMethod.attribute
    monkeypatch.setattr(
        AttributionMethod, "attribute", lambda self, p: calls.append(self.name) or original(self, p)
    )
    together = model_readings(model, "A", probes, methods)
    key = ["method", "record_id"]
    pd.testing.assert_frame_equal(
        together.sort_values(key).reset_index(drop=True), alone.sort_values(key).reset_index(drop=True)
    )
    assert sorted(calls) == sorted(["grad_x_input", "layer_ig", "layer_ig"] * len(probes.ids))
    # the twins' magnitudes differ: each is read with its own reduction
    one = together.set_index(key)
    assert not np.allclose(
        one.loc["grad_x_input", "total_1"], one.loc["grad_x_input@reduction=l2", "total_1"]
    )


def test_only_entries_that_differ_in_reduction_alone_are_twins() -> None:
    variants = [swap_variant(e, layer_ig_steps=STEPS) for e in TWINS]
    assert reduction_twins(variants) == {
        "grad_x_input": "grad_x_input",
        "grad_x_input@reduction=l2": "grad_x_input",
        "layer_ig@references=zero": "layer_ig@references=zero",
        "layer_ig@references=zero,reduction=l2": "layer_ig@references=zero",
        "layer_ig": "layer_ig",  # another reference set: another computation
    }
    steps = [
        swap_variant(e, layer_ig_steps=STEPS) for e in ("layer_ig", "layer_ig@layer_ig_steps=4,reduction=l2")
    ]
    assert reduction_twins(steps) == {e.entry: e.entry for e in steps}  # another key besides: not twins


def test_the_fixed_readings_are_the_runs_rows_and_the_seeded_nulls(probes) -> None:
    runs = {
        "A": pd.DataFrame(
            {"token_magnitude": [np.arange(SEQ, dtype=float)] * 3, "grad_evals": [30] * 3},
            index=list(probes.ids),
        )
    }
    frame = fixed_readings(ProbeSet(**{**probes.__dict__, "runs": runs}), seed=3)
    paper = frame[frame["method"] == RUN_METHOD]
    assert (paper["top"] == 2).all()  # the later cue has the larger magnitudes
    assert (paper["evals"] == 30).all()
    assert set(frame["method"]) == {RUN_METHOD, *NULL_METHODS}
    again = fixed_readings(ProbeSet(**{**probes.__dict__, "runs": runs}), seed=3)
    pd.testing.assert_frame_equal(frame, again)  # the random null is seeded
    other = fixed_readings(ProbeSet(**{**probes.__dict__, "runs": runs}), seed=4)
    assert not frame.equals(other)


def test_the_method_groups_partition_the_config_choices() -> None:
    assert sorted([RUN_METHOD, *TOKEN_METHODS, *NULL_METHODS]) == sorted(SWAP_CHOICES)
    assert set(SWAP_METHODS).isdisjoint(SWAP_OPT_IN)


def test_a_reading_ranks_the_cue_with_the_larger_best_token_and_a_tie_ranks_none() -> None:
    magnitude = np.zeros(9)
    magnitude[[2, 3, 6, 7]] = [0.1, 0.5, 0.4, 0.4]  # cue 2 has more in total, cue 1 the best token
    reading = token_reading(magnitude, ([2, 3], [6, 7]))
    assert reading.top == 1
    assert reading.share_1 == pytest.approx(0.6 / 1.4)
    assert CueReading((0.3, 0.3), (0.3, 0.3)).top == 0  # a method that moves both alike ranks neither
    assert math.isnan(CueReading((0.0, 0.0), (0.0, 0.0)).share_1)
    with pytest.raises(ValueError, match="share positions"):
        token_reading(magnitude, ([3, 4], [4, 5]))
    with pytest.raises(ValueError, match="within the 9 tokens"):
        token_reading(magnitude, ([3, 40], [7]))


def test_a_variant_entry_reads_as_its_method_under_its_keys(model, probes) -> None:
    """``name@key=value`` entries: each row named by the entry, equal to the method configured by hand with
    those keys, and different from the plain method where the key changes the reading."""
    entries = [
        "occlusion_token",
        "occlusion_token@replacement=mean",
        "grad_x_input@reduction=l2",
        "layer_ig@layer_ig_steps=4",
    ]
    frame = model_readings(model, "A", probes, method_configs(entries, STEPS)).set_index(
        ["method", "record_id"]
    )
    by_hand = {
        "occlusion_token@replacement=mean": AttributionConfig(method="occlusion_token", replacement="mean"),
        "grad_x_input@reduction=l2": AttributionConfig(method="grad_x_input", reduction="l2"),
        "layer_ig@layer_ig_steps=4": AttributionConfig(method="layer_ig", layer_ig_steps=4),
    }
    hand = model_readings(model, "A", probes, {e: SwapVariant(e, c) for e, c in by_hand.items()})
    hand = hand.set_index(["method", "record_id"])
    pd.testing.assert_frame_equal(frame.loc[list(by_hand)].sort_index(), hand.sort_index())
    assert (frame.loc["layer_ig@layer_ig_steps=4", "evals"] == 4 + 4).all()
    plain, mean = frame.loc["occlusion_token"], frame.loc["occlusion_token@replacement=mean"]
    assert not np.allclose(plain["best_1"], mean["best_1"])


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        (
            "occlusion_token@replacement=pad",
            "'occlusion_token@replacement=pad': attribution.replacement='pad'",
        ),
        (
            "grad_l2@replacement=mean",
            "'grad_l2@replacement=mean': attribution.replacement='mean' is a key of",
        ),
        ("paper@reduction=l2", "'paper@reduction=l2': only a token method"),
        ("grad_x_input@reduction", "'grad_x_input@reduction': write name@key=value"),
        ("layer_ig@layer_ig_steps=many", "'layer_ig@layer_ig_steps=many': layer_ig_steps must be an integer"),
        ("occlusion@replacement=mean", "evaluation.swap_methods="),
    ],
)
def test_a_bad_variant_entry_is_refused_in_one_line_naming_it(entry: str, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)) as info:
        EvaluationConfig(swap_methods=["paper", entry])
    assert "\n" not in str(info.value)
    assert EvaluationConfig(swap_methods=["paper", "sequential_ig@sequential_ig_steps=4"]).swap_methods


def test_xurs_params_takes_the_equal_terms_grid_and_refuses_a_bad_variant_writing_nothing(
    tmp_path, capsys
) -> None:
    """The user's path: the grid experiment composes with its variants; a bad entry on the command line
    (quoted, Hydra's grammar) exits 2 with one line naming the key and the entry, params.yaml untouched."""
    import yaml

    from xurs_pipeline.cli import main

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "params.yaml"
    conf = ["--conf", str(root / "conf"), "--out", str(out), "--no-dvc-yaml"]
    assert main(["params", *conf, "experiment=controlled_swap_equal_terms"]) == 0
    methods = yaml.safe_load(out.read_text())["evaluation"]["swap_methods"]
    assert {
        "occlusion_token@replacement=mean",
        "grad_x_input@reduction=l2",
        "layer_ig@references=pad",
        "occlusion_token@references=marginal:16",
    } <= set(methods)
    written = out.read_text()
    capsys.readouterr()
    bad = 'evaluation.swap_methods=[paper,"occlusion_token@replacement=pad"]'
    assert main(["params", *conf, "experiment=controlled_swap", bad]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith(
        "evaluation.swap_methods: 'occlusion_token@replacement=pad': attribution.replacement='pad': "
        "must be one of ('zero', 'mean', 'reference')"
    )
    assert out.read_text() == written
