"""Classifiers save and reload to identical predictions; wrong checkpoints fail clearly, writing nothing."""

from __future__ import annotations

import pytest
import torch
from rs_fixtures import fresh_classifier

from xurs_pipeline.io import ArtifactError
from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation
from xurs_pipeline.models.backbone import TinySpec, materialize_backbone
from xurs_pipeline.models.checkpoint import load_classifier, save_classifier, warm_start_head
from xurs_pipeline.models.collate import pad_batch
from xurs_pipeline.models.heads import ClassifierOutput
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.runner import Adaptation, train_classifier

SHORT = TrainConfig(max_epochs=1, batch_size=8, global_batch=8, lr_head=1e-2, lr_adapter=1e-2)


def _outputs(classifier, tokenizer, prompts) -> ClassifierOutput:
    ids, mask = pad_batch(prompts, tokenizer.pad_token_id, classifier.padding_side)
    with torch.no_grad():
        return classifier.eval().classify_ids(ids, mask)


@pytest.mark.parametrize(
    ("adaptation", "head"),
    [
        (Adaptation("head_only"), {"head_kind": "mlp", "output_kind": "mass15"}),
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
    train_classifier(classifier, train, dev, backbone.tokenizer.pad_token_id, adaptation, SHORT,
                     feature_cache_dir=tmp_path / "features")  # fmt: skip
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
    mlp, _ = fresh_classifier(tiny_backbone_dir, head_kind="mlp")
    with pytest.raises(ArtifactError, match="checkpoint from another model or head"):
        warm_start_head(mlp, tmp_path / "clf")


def test_failed_save_writes_nothing(tiny_backbone_dir, tmp_path) -> None:
    classifier, _ = fresh_classifier(tiny_backbone_dir)
    apply_adaptation(classifier, "partial", partial_layers=1)
    with pytest.raises(ValueError, match="pass its tokenizer"):
        save_classifier(classifier, tmp_path / "clf")  # partial needs the tokenizer
    assert list(tmp_path.iterdir()) == []
