"""Feature layers and pooling: the head's input against independent computations from the backbone's own
outputs, the cached pooled states against direct features, and checkpoints that rebuild the same model."""

from __future__ import annotations

import json

import pytest
import torch
from rs_fixtures import fresh_classifier

from xurs_pipeline.models.checkpoint import load_classifier, save_classifier
from xurs_pipeline.models.classifier import pool_mean, position_ids_from_mask
from xurs_pipeline.models.collate import pad_batch
from xurs_pipeline.models.feature_cache import cached_features
from xurs_pipeline.models.heads import RandomSetHead

HIDDEN, N_LAYERS = 64, 2  # the tiny backbone (conf/model/tiny.yaml)


def _batch(backbone, prompts, side):
    ids, mask = pad_batch(prompts, backbone.tokenizer.pad_token_id, side)
    assert (mask == 0).any(), "the prompts must mix lengths so that padding happens"
    return ids, mask


def _real_rows(mask: torch.Tensor) -> list[torch.Tensor]:
    return [row.nonzero().flatten() for row in mask]


def _reference(classifier, ids, mask, layers, pooling) -> torch.Tensor:
    """Features by hand from ``output_hidden_states``: index the last real token, average the real
    tokens, RMS-normalise (eps 1e-6) every layer but the final one, concatenate."""
    out = classifier.backbone(
        input_ids=ids,
        attention_mask=mask,
        position_ids=position_ids_from_mask(mask),
        output_hidden_states=True,
        use_cache=False,
    )
    rows = []
    for b, real in enumerate(_real_rows(mask)):
        pieces = []
        for layer in layers:
            h = out.hidden_states[layer][b]  # (seq, d)
            last, mean = h[real[-1]], h[real].mean(0)
            for v in {"last": [last], "mean": [mean], "last_mean": [last, mean]}[pooling]:
                final = layer % (N_LAYERS + 1) == N_LAYERS
                pieces.append(v if final else v / torch.sqrt(v.pow(2).mean() + 1e-6))
        rows.append(torch.cat(pieces))
    return torch.stack(rows)


@pytest.mark.parametrize("side", ["left", "right"])
def test_default_features_are_the_final_state_at_the_last_token_without_hidden_states(
    tiny_backbone_dir, labelled_prompts, side
) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir)
    ids, mask = _batch(backbone, labelled_prompts[0].inputs[:5], side)
    seen: list[dict] = []
    classifier.backbone.register_forward_pre_hook(lambda _m, _a, kw: seen.append(dict(kw)), with_kwargs=True)
    with torch.no_grad():
        features = classifier.features(classifier.embed(ids), mask)
        final = classifier.backbone(
            inputs_embeds=classifier.embed(ids),
            attention_mask=mask,
            position_ids=position_ids_from_mask(mask),
            use_cache=False,
        ).last_hidden_state
    assert not seen[0].get("output_hidden_states")  # the default costs no per-layer states
    last = torch.stack([final[b, real[-1]] for b, real in enumerate(_real_rows(mask))])
    assert features.shape == (5, HIDDEN)
    assert torch.equal(features, last)  # bit-identical to the former last-token pooling


def test_default_mlp_head_keeps_its_layout_and_seeded_init() -> None:
    head = RandomSetHead(HIDDEN, "mass15", "mlp", hidden_units=32, seed=5)
    assert list(head.state_dict()) == ["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        first, last = torch.nn.Linear(HIDDEN, 32), torch.nn.Linear(32, 15)
    assert torch.equal(head.net[0].weight, first.weight)
    assert torch.equal(head.net[2].weight, last.weight * 1e-2)


@pytest.mark.parametrize("side", ["left", "right"])
def test_mean_pooling_is_the_masked_mean_whatever_padding_holds(side) -> None:
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]] if side == "right" else [[1, 1, 1, 1], [0, 0, 1, 1]])
    hidden = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(0))
    hidden[mask == 0] = float("nan")  # padding states never reach the mean
    expected = torch.stack([hidden[0].mean(0), hidden[1][mask[1].bool()].mean(0)])
    torch.testing.assert_close(pool_mean(hidden, mask), expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize(
    ("layers", "pooling"), [([-1], "mean"), ([0, 1], "last"), ([1, -1], "last_mean"), ([-3, 2], "mean")]
)
def test_features_equal_hidden_states_pooled_and_rms_normalised(
    tiny_backbone_dir, labelled_prompts, side, layers, pooling
) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir, feature_layers=layers, pooling=pooling)
    ids, mask = _batch(backbone, labelled_prompts[0].inputs[:5], side)
    with torch.no_grad():
        features = classifier.features(classifier.embed(ids), mask)
        expected = _reference(classifier, ids, mask, layers, pooling)
    assert features.shape == (5, HIDDEN * len(layers) * (2 if pooling == "last_mean" else 1))
    torch.testing.assert_close(features, expected, atol=1e-5, rtol=1e-5)


def test_head_width_depth_and_dropout_follow_the_config(tiny_backbone_dir, labelled_prompts) -> None:
    classifier, backbone = fresh_classifier(
        tiny_backbone_dir,
        feature_layers=[0, -1],
        pooling="last_mean",
        head="mlp",
        head_hidden=16,
        head_depth=3,
        head_dropout=0.5,
        output_kind="mass15",
    )
    linears = [m for m in classifier.head.net if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [
        (4 * HIDDEN, 16),
        (16, 16),
        (16, 16),
        (16, 15),
    ]
    ids, mask = _batch(backbone, labelled_prompts[0].inputs[:5], "left")
    embeds = classifier.embed(ids).detach().requires_grad_(True)
    classifier.eval()
    once, again = classifier(embeds, mask).masses, classifier(embeds, mask).masses
    assert torch.equal(once, again)  # dropout is off in eval mode
    once[:, 0].sum().backward()  # attribution and zero-masking differentiate through every pooling
    assert embeds.grad is not None
    assert torch.isfinite(embeds.grad).all()
    assert (embeds.grad[mask.bool()].abs().sum(-1) > 0).all()  # every real token counts (mean pooling)
    classifier.head.net[-1].weight.data.normal_()  # visible outputs, so that dropout shows
    classifier.train()
    torch.manual_seed(0)
    with torch.no_grad():
        assert not torch.equal(classifier(embeds, mask).raw, classifier(embeds, mask).raw)


def test_cached_pooled_states_give_every_choice_the_direct_features(
    tiny_backbone_dir, labelled_prompts, tmp_path
) -> None:
    prompts = labelled_prompts[0].inputs[:7]
    choices = [([-1], "last"), ([0], "mean"), ([2, 0], "last_mean"), ([-2, -1], "last")]
    hits = []
    for layers, pooling in choices:
        classifier, backbone = fresh_classifier(tiny_backbone_dir, feature_layers=layers, pooling=pooling)
        pad = backbone.tokenizer.pad_token_id
        cached, hit = cached_features(classifier, prompts, pad, tmp_path, batch_size=3)
        hits.append(hit)
        with torch.no_grad():  # each prompt alone: the cache batched them (sorted by length, padded)
            direct = torch.cat([classifier.features(*_alone(classifier, p, pad)) for p in prompts])
        torch.testing.assert_close(cached, direct, atol=1e-5, rtol=1e-5)
    assert hits == [False, True, True, True]  # one backbone pass serves every choice
    assert len(list(tmp_path.glob("*.safetensors"))) == 1


def _alone(classifier, prompt, pad):
    ids, mask = pad_batch([prompt], pad, classifier.padding_side)
    return classifier.embed(ids), mask


def test_checkpoint_rebuilds_the_feature_choice_and_head(
    tiny_backbone_dir, labelled_prompts, tmp_path
) -> None:
    classifier, backbone = fresh_classifier(
        tiny_backbone_dir,
        feature_layers=[1, -1],
        pooling="last_mean",
        head="mlp",
        head_hidden=16,
        head_depth=2,
        head_dropout=0.2,
        seed=4,
    )
    save_classifier(classifier, tmp_path / "clf")
    loaded, _ = load_classifier(tmp_path / "clf")
    assert (loaded.feature_layers, loaded.pooling) == ((1, -1), "last_mean")
    assert loaded.head.describe() == classifier.head.describe()
    ids, mask = _batch(backbone, labelled_prompts[1].inputs, "left")
    with torch.no_grad():
        a, b = classifier.eval().classify_ids(ids, mask), loaded.classify_ids(ids, mask)
    torch.testing.assert_close(a.raw, b.raw, atol=0, rtol=0)
    torch.testing.assert_close(a.masses, b.masses, atol=0, rtol=0)


def test_classifier_saved_before_feature_choices_loads_with_the_defaults(tiny_backbone_dir, tmp_path) -> None:
    classifier, _ = fresh_classifier(tiny_backbone_dir, head="mlp", head_hidden=16)
    save_classifier(classifier, tmp_path / "clf")
    info_path = tmp_path / "clf" / "classifier.json"
    info = json.loads(info_path.read_text())
    del info["features"], info["head"]["depth"], info["head"]["dropout"]
    info_path.write_text(json.dumps(info))
    loaded, _ = load_classifier(tmp_path / "clf")
    assert (loaded.feature_layers, loaded.pooling) == ((-1,), "last")
    assert (loaded.head.depth, loaded.head.dropout.p) == (1, 0.0)
    assert all(torch.equal(loaded.head.state_dict()[k], v) for k, v in classifier.head.state_dict().items())


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        ([3], r"model\.feature_layers=\[3\]: \[3\] out of range.*\[-3, 2\]"),
        ([-4, 0], r"model\.feature_layers=\[-4, 0\]: \[-4\] out of range"),
        ([2, -1], r"model\.feature_layers=\[2, -1\]: names a layer twice"),
        ([], r"model\.feature_layers=\[\]: must be a non-empty list"),
    ],
)
def test_layers_outside_the_backbone_name_the_key_and_range(tiny_backbone_dir, layers, message) -> None:
    with pytest.raises(ValueError, match=message):
        fresh_classifier(tiny_backbone_dir, feature_layers=layers)
