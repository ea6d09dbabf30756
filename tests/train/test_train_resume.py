"""An interrupted run resumed from its saved state ends exactly like an uninterrupted run."""

from __future__ import annotations

import pytest
import torch
from rs_fixtures import fresh_classifier

from xurs_pipeline.models.adapters import LoraSpec
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.runner import Adaptation, train_classifier

# LoRA with dropout: the resumed run must also restore the RNG that drives dropout.
ADAPTATION = Adaptation("lora", lora=LoraSpec(rank=4, alpha=8.0, dropout=0.2, targets=["q_proj", "v_proj"]))
SETTINGS = TrainConfig(
    max_epochs=3,
    patience=0,
    batch_size=6,
    global_batch=12,
    lr_head=5e-2,
    lr_adapter=5e-2,
    warmup_fraction=0.3,
    seed=11,
)


class Interrupted(RuntimeError):
    pass


def _run(backbone_dir, data, state_dir, resume=False, stop_after=None):
    classifier, backbone = fresh_classifier(backbone_dir, head="mlp", seed=5)

    def interrupt(record) -> None:
        if stop_after is not None and record.epoch == stop_after:
            raise Interrupted

    pad = backbone.tokenizer.pad_token_id
    outcome = train_classifier(
        classifier,
        data[0],
        data[1],
        pad,
        ADAPTATION,
        SETTINGS,
        state_dir=state_dir,
        resume=resume,
        on_epoch_end=interrupt,
    )
    return classifier, outcome.fit


def test_resume_equals_uninterrupted(tiny_backbone_dir, labelled_prompts, tmp_path) -> None:
    full, full_result = _run(tiny_backbone_dir, labelled_prompts, tmp_path / "full")
    with pytest.raises(Interrupted):
        _run(tiny_backbone_dir, labelled_prompts, tmp_path / "cut", stop_after=0)
    resumed, resumed_result = _run(tiny_backbone_dir, labelled_prompts, tmp_path / "cut", resume=True)
    assert resumed_result.resumed_from_epoch == 0
    assert resumed_result.history == full_result.history  # every epoch's losses and learning rate
    assert (
        resumed_result.optimizer_steps == full_result.optimizer_steps == 3 * 2
    )  # ceil(ceil(24/6)/2) a epoch
    assert resumed_result.best_epoch == full_result.best_epoch
    a, b = dict(full.named_parameters()), dict(resumed.named_parameters())
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_without_resume_a_saved_state_is_ignored(tiny_backbone_dir, labelled_prompts, tmp_path) -> None:
    with pytest.raises(Interrupted):
        _run(tiny_backbone_dir, labelled_prompts, tmp_path / "s", stop_after=1)
    _, result = _run(tiny_backbone_dir, labelled_prompts, tmp_path / "s", resume=False)
    assert result.resumed_from_epoch is None
    assert result.epochs_run == 3
