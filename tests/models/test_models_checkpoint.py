"""Classifiers save and reload to identical predictions; wrong checkpoints fail clearly, writing nothing."""

from __future__ import annotations

import pytest
import torch
from rs_fixtures import fresh_classifier, make_prompts, train_on

from xurs_pipeline.io import ArtifactError
from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation
from xurs_pipeline.models.backbone import TinySpec, materialize_backbone
from xurs_pipeline.models.checkpoint import load_classifier, save_classifier, warm_start_head
from xurs_pipeline.models.collate import pad_batch
from xurs_pipeline.models.heads import ClassifierOutput
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.runner import Adaptation

SHORT = TrainConfig(max_epochs=1, batch_size=8, global_batch=8, lr_head=1e-2, lr_adapter=1e-2)


def _outputs(classifier, tokenizer, prompts) -> ClassifierOutput:
    ids, mask = pad_batch(prompts, tokenizer.pad_token_id, classifier.padding_side)
    with torch.no_grad():
        return classifier.eval().classify_ids(ids, mask)


@pytest.mark.parametrize(
    ("adaptation", "head"),
    [
        (Adaptation("head_only"), {"head": "mlp", "output_kind": "mass15"}),
        (Adaptation("lora", lora=LoraSpec(rank=4, alpha=8.0, dropout=0.1)), {}),
        (Adaptation("partial", partial_layers=1), {}),
    ],
)
def test_save_and_reload_give_identical_predictions(
    tiny_backbone_dir, labelled_prompts, tmp_path, adaptation, head
) -> None:
    train, dev = labelled_prompts
    if head.get("output_kind") == "mass15":
        uniform = torch.full((len(train.labels), 15), 1 / 15)
        train = type(train)(train.inputs, train.labels, uniform)
        dev = type(dev)(dev.inputs, dev.labels, uniform[: len(dev.labels)])
    classifier, backbone = fresh_classifier(tiny_backbone_dir, **head)
    train_on(classifier, backbone, (train, dev), adaptation, SHORT, tmp_path / "features")
    save_classifier(classifier, tmp_path / "clf", backbone.tokenizer)
    loaded, tokenizer = load_classifier(tmp_path / "clf")
    a, b = _outputs(classifier, backbone.tokenizer, dev.inputs), _outputs(loaded, tokenizer, dev.inputs)
    torch.testing.assert_close(a.raw, b.raw, atol=0, rtol=0)
    torch.testing.assert_close(a.masses, b.masses, atol=0, rtol=0)
    assert not any(p.requires_grad for p in loaded.parameters())
    assert not loaded.training
    embedded = (tmp_path / "clf" / "backbone").is_dir()
    assert embedded == (adaptation.mode == "partial")  # a frozen backbone is referenced, not copied


def test_checkpoint_from_another_backbone_is_refused(tiny_backbone_dir, tmp_path) -> None:
    classifier, _backbone = fresh_classifier(tiny_backbone_dir)
    save_classifier(classifier, tmp_path / "clf")
    other = tmp_path / "other_backbone"
    materialize_backbone(other, "tiny", tiny=TinySpec(seed=1))  # same shapes, other weights
    with pytest.raises(ArtifactError, match="checkpoint from another model"):
        load_classifier(tmp_path / "clf", backbone_dir=other)
    fresh, _ = fresh_classifier(other)
    with pytest.raises(ArtifactError, match=r"train\.init_head_from=.*checkpoint from another model"):
        warm_start_head(fresh, tmp_path / "clf")


def test_warm_start_copies_the_saved_head(tiny_backbone_dir, tmp_path) -> None:
    trained, _ = fresh_classifier(tiny_backbone_dir, seed=1)
    save_classifier(trained, tmp_path / "clf")
    fresh, _ = fresh_classifier(tiny_backbone_dir, seed=2)
    assert not torch.equal(fresh.head.net.weight, trained.head.net.weight)
    warm_start_head(fresh, tmp_path / "clf")
    torch.testing.assert_close(fresh.head.net.weight, trained.head.net.weight, atol=0, rtol=0)
    mlp, _ = fresh_classifier(tiny_backbone_dir, head="mlp")
    with pytest.raises(ArtifactError, match="checkpoint from another model or head"):
        warm_start_head(mlp, tmp_path / "clf")


def test_failed_save_writes_nothing(tiny_backbone_dir, tmp_path) -> None:
    classifier, _ = fresh_classifier(tiny_backbone_dir)
    apply_adaptation(classifier, "partial", partial_layers=1)
    with pytest.raises(ValueError, match="pass its tokenizer"):
        save_classifier(classifier, tmp_path / "clf")  # partial needs the tokenizer
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def lora_checkpoint(tiny_backbone_dir, tmp_path_factory):
    """A LoRA classifier trained one epoch (its adapters are no longer zero), saved; (dir, dev prompts)."""
    classifier, backbone = fresh_classifier(tiny_backbone_dir)
    train, dev = make_prompts(backbone.tokenizer, 48), make_prompts(backbone.tokenizer, 16, start=48)
    directory = tmp_path_factory.mktemp("lora")
    adaptation = Adaptation("lora", lora=LoraSpec(rank=4, alpha=8.0, dropout=0.0))
    train_on(classifier, backbone, (train, dev), adaptation, SHORT, directory / "features")
    save_classifier(classifier, directory / "clf", backbone.tokenizer)
    return directory / "clf", dev


@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float32, 1e-5), (torch.bfloat16, 2**-6)])
def test_merged_lora_is_the_trained_function_to_rounding(lora_checkpoint, dtype, tolerance) -> None:
    """``merge_lora`` (attribution.merge_lora) folds the adapters into the weights: no LoRA layer is left,
    the masses and the width's input gradient are the adapters' own to the rounding of the dtype that
    computes them (float32 1e-5; bfloat16's 8-bit mantissa, 2^-6 on values of order 1), while the base
    weights alone (adapters dropped) give another function."""
    from peft.tuners.lora import LoraLayer

    from xurs_pipeline.attribution.model import set_precision
    from xurs_pipeline.credal import credal_width

    directory, dev = lora_checkpoint
    adapters, tokenizer = load_classifier(directory)
    merged, _ = load_classifier(directory, merge_lora=True)
    assert any(isinstance(m, LoraLayer) for m in adapters.modules())
    assert not any(isinstance(m, LoraLayer) for m in merged.modules())
    for model in (adapters, merged):
        set_precision(model, dtype)
    ids, mask = pad_batch(dev.inputs, tokenizer.pad_token_id, adapters.padding_side)

    def width_and_gradient(model):
        embeds = model.embed(ids).detach().requires_grad_(True)
        width = credal_width(model(embeds, mask, None).masses.float(), validate=False)[:, 0]
        (gradient,) = torch.autograd.grad(width.sum(), embeds)
        return width.detach(), gradient.float()

    (w_a, g_a), (w_m, g_m) = width_and_gradient(adapters), width_and_gradient(merged)
    torch.testing.assert_close(w_m, w_a, atol=tolerance, rtol=0)
    assert float((g_m - g_a).norm() / g_a.norm()) < 10 * tolerance
    with adapters.backbone.disable_adapter():  # the same weights with the adapters switched off
        w_base, _ = width_and_gradient(adapters)
    # the agreement above is not the base model's: in float32 the adapters moved the widths by > 1e-3
    if dtype == torch.float32:
        assert float((w_base - w_a).abs().max()) > 100 * tolerance
