"""One training step changes exactly the parameters the adaptation mode allows."""

from __future__ import annotations

import pytest
import torch
from peft import PeftModel
from rs_fixtures import fresh_classifier, train_on

from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation, linear_module_names, trainable_groups
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.runner import Adaptation

ONE_STEP = TrainConfig(
    max_epochs=1, batch_size=64, global_batch=64, lr_head=1e-2, lr_adapter=1e-2, warmup_fraction=0.0
)


def _one_step(classifier, backbone, data, adaptation: Adaptation, tmp_path) -> dict[str, bool]:
    """Train one optimizer step; return {name: changed} for every parameter that existed before."""
    before = {name: (p, p.detach().clone()) for name, p in classifier.named_parameters()}
    outcome = train_on(classifier, backbone, (data[0], data[1]), adaptation, ONE_STEP, tmp_path / "features")
    assert outcome.fit.optimizer_steps == 1
    return {name: not torch.equal(p.detach(), old) for name, (p, old) in before.items()}


def test_head_only_changes_only_the_head(tiny_backbone_dir, labelled_prompts, tmp_path) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir)
    changed = _one_step(classifier, backbone, labelled_prompts, Adaptation("head_only"), tmp_path)
    assert {n for n, c in changed.items() if c} == {"head.net.weight", "head.net.bias"}


def test_partial_changes_last_blocks_norm_and_head(tiny_backbone_dir, labelled_prompts, tmp_path) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir, head="mlp")
    changed = _one_step(
        classifier, backbone, labelled_prompts, Adaptation("partial", partial_layers=1), tmp_path
    )
    allowed = ("backbone.layers.1.", "backbone.norm.", "head.")
    assert all(c == name.startswith(allowed) for name, c in changed.items()), {
        n: c for n, c in changed.items() if c != n.startswith(allowed)
    }
    assert not changed["backbone.embed_tokens.weight"]


def test_lora_changes_only_adapters_and_head(tiny_backbone_dir, labelled_prompts, tmp_path) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir)
    lora = LoraSpec(rank=4, alpha=8.0, dropout=0.0, targets=["q_proj", "v_proj", "down_proj"])
    changed = _one_step(classifier, backbone, labelled_prompts, Adaptation("lora", lora=lora), tmp_path)
    # Every pre-existing backbone weight is untouched; the head moved.
    assert {n for n, c in changed.items() if c} == {"head.net.weight", "head.net.bias"}
    assert isinstance(classifier.backbone, PeftModel)
    lora_b = {n: p for n, p in classifier.backbone.named_parameters() if "lora_B" in n}
    assert len(lora_b) == 2 * 3  # 2 layers x 3 target modules
    assert all(p.abs().sum() > 0 for p in lora_b.values())  # B starts at zero; one step moved it
    groups = trainable_groups(classifier)
    assert {id(p) for p in groups["adapter"]} == {
        id(p) for n, p in classifier.backbone.named_parameters() if "lora_" in n
    }


def test_missing_lora_target_names_the_setting(tiny_backbone_dir) -> None:
    classifier, _ = fresh_classifier(tiny_backbone_dir)
    with pytest.raises(ValueError, match=r"train.lora_targets: \['c_attn'\] not in LlamaModel") as err:
        apply_adaptation(classifier, "lora", lora=LoraSpec(targets=["q_proj", "c_attn"]))
    assert "q_proj" in str(err.value)  # the message lists what exists
    assert not isinstance(classifier.backbone, PeftModel)
    assert linear_module_names(classifier.backbone) == [
        "down_proj",
        "gate_proj",
        "k_proj",
        "o_proj",
        "q_proj",
        "up_proj",
        "v_proj",
    ]


def test_partial_layers_beyond_depth_and_unknown_mode_fail(tiny_backbone_dir) -> None:
    classifier, _ = fresh_classifier(tiny_backbone_dir)
    with pytest.raises(ValueError, match=r"train\.partial_layers=3: the backbone has only 2 blocks"):
        apply_adaptation(classifier, "partial", partial_layers=3)
    with pytest.raises(ValueError, match=r"train\.adaptation='full'"):
        apply_adaptation(classifier, "full")
