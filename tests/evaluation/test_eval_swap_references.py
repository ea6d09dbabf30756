"""The swap study's reference sets (attribution/variants.py, evaluation/swap/probe_references.py): every
method that reads a reference reads the same ones (zero, pad, train:k, counterfactual, marginal:K), each
checked against an independent computation on a tiny causal classifier: marginal occlusion against an explicit
loop over the drawn rows and full forwards, marginal Shapley against the averaged game by enumeration, layer
IG from the pad row and from two training prompts against a Gauss-Legendre sum computed by hand through the
middle block (whose output the next block's attention mixes across positions), the counterfactual reference
against the text with both cues resolved; bad entries refused in one line."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import AttributionInputError
from xurs_pipeline.attribution.methods.gradient import middle_block
from xurs_pipeline.attribution.methods.perturbation import shapley_values
from xurs_pipeline.attribution.references import pad_or_truncate
from xurs_pipeline.attribution.targets import width_target
from xurs_pipeline.attribution.variants import ReferenceSet, reference_set, swap_variant
from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.config import EvaluationConfig
from xurs_pipeline.evaluation.swap.behaviour import both_resolved
from xurs_pipeline.evaluation.swap.estimator_readings import estimator_config
from xurs_pipeline.evaluation.swap.inputs import prepared_references
from xurs_pipeline.evaluation.swap.probe_references import ReferenceSource, probe_reference_ids
from xurs_pipeline.evaluation.swap.readings import ProbeSet, method_configs, model_readings, token_reading
from xurs_pipeline.io import ArtifactError
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead
from xurs_pipeline.models.tiny import build_tiny_llama, train_tiny_tokenizer

MAX_TOKENS, STEPS, SEED = 256, 8, 3
CUE = re.compile(r"The (blood|urine) test is positive for ([^.]+)\.")
SETS = ("zero", "pad", "train:1", "train:2", "counterfactual", "marginal:3")


@pytest.fixture(scope="module")
def setup():
    records = generate_swap((6, 1, 4), 4, seed=2, order="counterbalanced")
    tokenizer = train_tiny_tokenizer([r.question + " " + " ".join(r.options) for r in records], 400)
    backbone = build_tiny_llama(len(tokenizer), hidden_size=32, num_layers=3, num_heads=4, seed=0).model
    classifier = RandomSetClassifier(backbone, RandomSetHead(32, "belief14", seed=1)).double().eval()
    with torch.no_grad():  # widths away from 0 and 1, and a pad row that is not the zero row
        classifier.head.net.bias.copy_(torch.tensor([-3.0] * 4 + [-1.2] * 6 + [0.3] * 4))
        embedding = classifier.backbone.get_input_embeddings().weight
        embedding[tokenizer.pad_token_id] = torch.randn(32, generator=torch.Generator().manual_seed(4))
    prompts = prepare_records(records, tokenizer, MAX_TOKENS).frame
    probes = [r for r in records if r.synthetic.variant == "probe"][:1]
    source = ReferenceSource.of(
        prompts, AttributionConfig(reference_alignment="sequence"), tokenizer, MAX_TOKENS, SEED
    )
    return classifier, prompts, probes, source


def probe_set(setup, sets=SETS) -> ProbeSet:
    _, prompts, probes, source = setup
    by_id = prompts.set_index("record_id")
    ids = {p.record_id: list(map(int, by_id.loc[p.record_id, "input_ids"])) for p in probes}
    cues = {rid: tuple(list(map(int, c)) for c in by_id.loc[rid, "cue_positions"]) for rid in ids}
    built = {
        name: {
            p.record_id: probe_reference_ids(reference_set(name), p, ids[p.record_id], source) for p in probes
        }
        for name in sets
    }
    return ProbeSet(
        ids=ids,
        cues=cues,
        labels={p.record_id: p.answer_idx for p in probes},
        references={rid: built["train:2"][rid] for rid in ids},
        input_only={rid: np.zeros(len(ids[rid])) for rid in ids},
        reference_sets=built,
    )


def readings(setup, probes: ProbeSet, entries: list[str]) -> pd.DataFrame:
    frame = model_readings(setup[0], "A", probes, method_configs(entries, STEPS))
    return frame.set_index(["method", "record_id"])


def width_of(classifier, label: int):
    """embeds (b, L, d) -> W of ``label`` (b,) by the classifier's own forward, every position attended."""

    def width(e: torch.Tensor) -> torch.Tensor:
        b, length = e.shape[:2]
        mask, positions = torch.ones(b, length, dtype=torch.long), torch.arange(length).expand(b, length)
        return width_target(classifier(e, mask, positions).masses.double(), torch.full((b,), label))

    return width


def embedded(classifier, ids) -> torch.Tensor:
    with torch.no_grad():
        return classifier.backbone.get_input_embeddings()(torch.as_tensor(np.asarray(ids)))


def assert_reads(row: pd.Series, magnitude: np.ndarray, cues) -> None:
    expected = token_reading(magnitude, cues)
    assert row["top"] == expected.top
    np.testing.assert_allclose(
        [row["best_1"], row["best_2"], row["total_1"], row["total_2"]],
        [*expected.best, *expected.total],
        rtol=1e-6,
        atol=1e-10,
    )


def test_marginal_occlusion_is_the_width_averaged_over_the_drawn_rows_by_an_explicit_loop(setup) -> None:
    """Kim et al.'s marginalisation: F(X) - mean_k F(X with row i = the k-th drawn training row at i), here
    by one full forward per (token, draw); it is not zero-masking. The study scores the cues' tokens only
    (``Problem.read``), each draw paying for those and the unmasked prompt."""
    classifier, probes = setup[0], probe_set(setup)
    frame = readings(setup, probes, ["occlusion_token@references=marginal:3", "occlusion_token"])
    for rid, ids in probes.ids.items():
        x, drawn = embedded(classifier, [ids]), embedded(classifier, probes.reference_sets["marginal:3"][rid])
        width = width_of(classifier, probes.labels[rid])
        with torch.no_grad():
            f_x, scores = float(width(x)[0]), []
            for i in range(len(ids)):
                variants = x.repeat(len(drawn), 1, 1)
                variants[:, i] = drawn[:, i]
                scores.append(f_x - float(width(variants).mean()))
        row = frame.loc[("occlusion_token@references=marginal:3", rid)]
        assert_reads(row, np.abs(scores), probes.cues[rid])
        read = sum(len(cue) for cue in probes.cues[rid])  # the study reads the cues' tokens only
        assert (row["forwards"], row["grad_evals"]) == (3 * (read + 1), 0)
        zero = frame.loc[("occlusion_token", rid)]
        assert not np.isclose(zero["total_1"], row["total_1"])


def test_marginal_shapley_is_shapley_of_the_game_averaged_over_the_draws(setup) -> None:
    """Shapley is linear in the game: the mean of the per-draw values is the value of v(S) = mean_k F(X
    with every span outside S taken from draw k), enumerated here with full forwards."""
    classifier, probes = setup[0], probe_set(setup)
    frame = readings(setup, probes, ["shapley_span@references=marginal:3"])
    for rid, ids in probes.ids.items():
        x, drawn = embedded(classifier, [ids]), embedded(classifier, probes.reference_sets["marginal:3"][rid])
        cues = probes.cues[rid]
        spans = [*cues, sorted(set(range(len(ids))) - {p for c in cues for p in c})]
        width, game = width_of(classifier, probes.labels[rid]), {}
        for size in range(4):
            for coalition in itertools.combinations(range(3), size):
                variants = x.repeat(len(drawn), 1, 1)
                for j in set(range(3)) - set(coalition):
                    variants[:, spans[j]] = drawn[:, spans[j]]
                with torch.no_grad():
                    game[frozenset(coalition)] = float(width(variants).mean())
        phi = np.abs(shapley_values(game, 3))
        row = frame.loc[("shapley_span@references=marginal:3", rid)]
        np.testing.assert_allclose([row["best_1"], row["best_2"]], phi[:2], rtol=1e-6, atol=1e-10)
        assert row["forwards"] == 3 * 2**3


def _block_ig(classifier, x: torch.Tensor, reference: torch.Tensor, label: int) -> torch.Tensor:
    """IG of W_label with respect to the middle block's output, from its value at ``reference`` to its value
    at ``x``, by STEPS Gauss-Legendre points, the block's output replaced through a forward hook: (L, d)."""
    block, width = middle_block(classifier), width_of(classifier, label)
    seen: dict[str, torch.Tensor] = {}

    def hook(_module, _inputs, out):
        hidden = out[0] if isinstance(out, tuple) else out
        if "h" in seen:
            hidden = seen["h"]
        else:
            seen["read"] = hidden
        return (hidden, *out[1:]) if isinstance(out, tuple) else hidden

    handle = block.register_forward_hook(hook)
    try:
        ends = []
        for e in (x, reference):
            with torch.no_grad():
                width(e)
            ends.append(seen.pop("read").detach())
        h_x, h_b = ends
        nodes, weights = np.polynomial.legendre.leggauss(STEPS)
        total = torch.zeros_like(h_x)
        for alpha, w in zip((nodes + 1) / 2, weights / 2, strict=True):
            seen["h"] = (h_b + alpha * (h_x - h_b)).requires_grad_(True)
            total += w * torch.autograd.grad(width(x).sum(), seen["h"])[0]
    finally:
        handle.remove()
    return ((h_x - h_b) * total)[0]


@pytest.mark.parametrize("name", ["pad", "train:2"])
def test_layer_ig_from_a_set_is_ig_through_the_block_by_hand_averaged_over_the_set(setup, name) -> None:
    classifier, probes = setup[0], probe_set(setup)
    frame = readings(setup, probes, [f"layer_ig@references={name}", "layer_ig@references=zero"])
    for rid, ids in probes.ids.items():
        x = embedded(classifier, [ids]).double()
        refs = embedded(classifier, probes.reference_sets[name][rid]).double()
        coords = torch.stack([_block_ig(classifier, x, b[None], probes.labels[rid]) for b in refs]).mean(0)
        row = frame.loc[(f"layer_ig@references={name}", rid)]
        assert_reads(row, coords.sum(-1).abs().detach().numpy(), probes.cues[rid])  # layer_ig's own |sum|
        assert row["grad_evals"] == len(refs) * STEPS
        assert not np.isclose(frame.loc[("layer_ig@references=zero", rid), "total_1"], row["total_1"])
    assert (probes.reference_sets["pad"][rid] == setup[3].pad_id).all()


def test_no_set_is_the_first_training_reference_and_zero_is_zero_replacement(setup) -> None:
    probes = probe_set(setup)
    pairs = [
        ("layer_ig", "layer_ig@references=train:1"),
        ("occlusion_token", "occlusion_token@references=zero"),
        ("occlusion_span@replacement=reference", "occlusion_span@references=train:1"),
    ]
    frame = readings(setup, probes, [e for pair in pairs for e in pair])
    for plain, with_set in pairs:
        pd.testing.assert_frame_equal(frame.loc[plain], frame.loc[with_set], check_names=False)


def test_the_counterfactual_reference_is_the_probe_with_both_cues_resolved_aligned_in_place(setup) -> None:
    _, prompts, probes, source = setup
    by_id = prompts.set_index("record_id")
    for probe in probes:
        label = probe.options[probe.answer_idx]
        text = both_resolved(probe).question
        stated = CUE.sub(lambda m, name=label: f"The {m[1]} test is positive for {name}.", probe.question)
        assert text == stated
        assert text != probe.question
        assert [m[2] for m in CUE.finditer(text)] == [label, label]
        ids = np.asarray(by_id.loc[probe.record_id, "input_ids"], dtype=np.int64)
        (reference,) = probe_reference_ids(ReferenceSet("counterfactual"), probe, ids.tolist(), source)
        changed = set(np.flatnonzero(reference != ids).tolist())
        cues = [set(map(int, c)) for c in by_id.loc[probe.record_id, "cue_positions"]]
        assert changed <= cues[0] | cues[1]  # only the cues' tokens differ
        assert changed & cues[0]  # both cues changed
        assert changed & cues[1]


def test_training_and_marginal_sets_come_from_the_training_split_as_declared(setup) -> None:
    _, prompts, probes, source = setup
    rid = probes[0].record_id
    ids = list(map(int, prompts.set_index("record_id").loc[rid, "input_ids"]))
    two = probe_reference_ids(reference_set("train:2"), probes[0], ids, source)
    cfg = AttributionConfig(
        method="kronrod", refs_per_collection=2, kronrod_max_evals=60, reference_alignment="sequence"
    )
    paper = prepared_references(prompts, [rid], cfg, source.pad_id)
    np.testing.assert_array_equal(two, paper[rid])  # the paper's run reads train:2
    drawn = probe_reference_ids(reference_set("marginal:5"), probes[0], ids, source)
    fitted = {tuple(pad_or_truncate(t, len(ids), source.pad_id)) for t in source.training.values()}
    assert drawn.shape == (5, len(ids))
    assert {tuple(r) for r in drawn.tolist()} <= fitted
    again = probe_reference_ids(reference_set("marginal:5"), probes[0], ids, source)
    other = probe_reference_ids(reference_set("marginal:5"), probes[0], ids, replace(source, seed=SEED + 1))
    np.testing.assert_array_equal(drawn, again)
    assert not np.array_equal(drawn, other)
    with pytest.raises(AttributionInputError, match=r"^references=train:32: .*training split has only 24"):
        probe_reference_ids(reference_set("train:32"), probes[0], ids, source)


@pytest.mark.parametrize("name", ["pad", "train:2"])
def test_the_papers_estimator_from_a_set_is_ig_at_the_input_by_hand_averaged_over_it(setup, name) -> None:
    """``paper@references=R`` reruns the experiment's estimator (here IG, 8 Gauss-Legendre points) from every
    reference of R: (x - b) sum_k w_k dW/dx(b + a_k (x - b)), averaged over R, its L2 over hidden (the
    paper's magnitude) or its |sum| (``reduction=abs_sum``)."""
    classifier, probes = setup[0], probe_set(setup)
    run = AttributionConfig(
        method="ig", ig_points=STEPS, refs_per_collection=2, reference_alignment="sequence"
    )
    entries = [f"paper@references={name}", f"paper@references={name},reduction=abs_sum"]
    frame = model_readings(classifier, "A", probes, method_configs(entries, STEPS, run))
    frame = frame.set_index(["method", "record_id"])
    for rid, ids in probes.ids.items():
        x, width = embedded(classifier, [ids]), width_of(classifier, probes.labels[rid])
        nodes, weights = np.polynomial.legendre.leggauss(STEPS)
        coords = []
        for b in embedded(classifier, probes.reference_sets[name][rid]):
            total = torch.zeros_like(x)
            for alpha, w in zip((nodes + 1) / 2, weights / 2, strict=True):
                point = (b + alpha * (x - b)).requires_grad_(True)
                total += w * torch.autograd.grad(width(point).sum(), point)[0]
            coords.append(((x - b) * total)[0])
        mean = torch.stack(coords).mean(0).detach()
        assert_reads(frame.loc[(entries[0], rid)], mean.norm(dim=-1).numpy(), probes.cues[rid])
        assert_reads(frame.loc[(entries[1], rid)], mean.sum(-1).abs().numpy(), probes.cues[rid])
        assert frame.loc[(entries[0], rid), "grad_evals"] == len(coords) * STEPS


def test_the_rerun_estimator_keeps_the_experiments_budget_per_reference() -> None:
    run = AttributionConfig(
        method="kronrod",
        refs_per_collection=2,
        kronrod_max_evals=600,
        path="blocks",
        reference_alignment="sequence",
    )
    eight = estimator_config(run, ReferenceSet("train", 8))
    assert (eight.refs_per_collection, eight.kronrod_max_evals, eight.reference) == (8, 2400, "train")
    assert (eight.reference_alignment, eight.path) == ("position", "blocks")  # the rows are fitted already
    zero = estimator_config(run, ReferenceSet("zero"))
    assert (zero.reference, zero.refs_per_collection, zero.kronrod_max_evals, zero.path) == (
        "zero",
        1,
        300,
        "straight",
    )
    with pytest.raises(ArtifactError, match=r"attribution\.method='layer_ig' is no path estimator"):
        estimator_config(AttributionConfig(method="layer_ig"), ReferenceSet("train", 2))


def test_an_entry_reads_its_set_and_method_keys() -> None:
    v = swap_variant("sequential_ig@sequential_ig_steps=4,references=marginal:16")
    assert (v.config.sequential_ig_steps, v.config.replacement) == (4, "reference")
    assert v.references == ReferenceSet("marginal", 16)
    assert swap_variant("layer_ig@references=counterfactual", layer_ig_steps=7).config.layer_ig_steps == 7
    assert swap_variant("occlusion_span").references == ReferenceSet("train", 1)


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ("grad_l2@references=zero", "'grad_l2@references=zero': grad_l2 reads no reference"),
        ("grad_x_input@references=train:8", "'grad_x_input@references=train:8': grad_x_input reads no"),
        ("paper@references=zero,span_tokens=4", "'paper@references=zero,span_tokens=4': paper takes"),
        ("paper@references=zero,reduction=max", "'paper@references=zero,reduction=max': attribution."),
        ("layer_ig@references=train", "'layer_ig@references=train': references='train': must be zero, pad"),
        ("layer_ig@references=train:0", "'layer_ig@references=train:0': references='train:0'"),
        ("layer_ig@references=pad:2", "'layer_ig@references=pad:2': references='pad:2'"),
        (
            "occlusion_token@references=pad,replacement=mean",
            "'occlusion_token@references=pad,replacement=mean': give references without replacement",
        ),
        (
            "layer_ig@references=zero,references=pad",
            "'layer_ig@references=zero,references=pad': references given twice",
        ),
        ("layer_ig@references=zero,layer_ig_steps=x", "'layer_ig@references=zero,layer_ig_steps=x': layer_"),
        ("layer_ig@references=zero,span_tokens=4", "'layer_ig@references=zero,span_tokens=4': attribution."),
    ],
)
def test_a_bad_reference_entry_is_refused_in_one_line_naming_it(entry: str, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"evaluation.swap_methods: {named}")) as info:
        EvaluationConfig(swap_methods=["paper", entry])
    assert "\n" not in str(info.value)
