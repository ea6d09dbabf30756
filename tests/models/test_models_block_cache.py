"""Partial tuning on cached lower-block states (``models.block_cache``): the top-block view reproduces the
full classifier, training from states equals training from token ids, and a damaged cache is recomputed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from rs_fixtures import fresh_classifier

from xurs_pipeline.models.adapters import apply_adaptation, trainable_groups
from xurs_pipeline.models.block_cache import (
    TopBlocks,
    cached_lower_states,
    lower_states,
    split_index,
)
from xurs_pipeline.models.collate import pad_batch, pad_states
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.data import Collator, TokenForward
from xurs_pipeline.train.loop import Trainee, fit
from xurs_pipeline.train.runner import Adaptation, train_classifier


@pytest.mark.parametrize("padding_side", ["left", "right"])
@pytest.mark.parametrize("tuned", [1, 2])
def test_top_blocks_from_cached_states_equal_the_full_classifier(
    tiny_backbone_dir, labelled_prompts, padding_side, tuned
) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir, output_kind="belief14")
    classifier.padding_side = padding_side
    classifier.eval()
    ids = labelled_prompts[0].inputs[:6]
    pad = backbone.tokenizer.pad_token_id
    states = lower_states(classifier, ids, split_index(classifier, tuned), pad, batch_size=4)
    assert [s.shape[0] for s in states] == [len(x) for x in ids]  # real tokens only
    batch_states, mask = pad_states(states, padding_side)
    with torch.no_grad():
        via_states = TopBlocks(classifier, tuned)(batch_states, mask).masses
        tokens, token_mask = pad_batch(ids, pad, padding_side)
        direct = classifier.classify_ids(tokens, token_mask).masses
    torch.testing.assert_close(via_states, direct, atol=2e-6, rtol=1e-5)


def test_top_blocks_share_parameters_and_leave_the_backbone_whole(tiny_backbone_dir) -> None:
    classifier, _ = fresh_classifier(tiny_backbone_dir)
    top = TopBlocks(classifier, 1)
    assert len(classifier.backbone.layers) == 2
    assert len(top.view.layers) == 1
    assert top.view.layers[0] is classifier.backbone.layers[1]
    assert top.view.norm is classifier.backbone.norm
    assert top.head is classifier.head
    assert classifier.backbone.embed_tokens is not None


def test_partial_training_from_states_matches_training_from_tokens(
    tiny_backbone_dir, labelled_prompts, tmp_path
):
    """Same seed, same data: the cached path trains the same weights as the token path (to rounding)."""
    train, dev = labelled_prompts
    settings = TrainConfig(
        max_epochs=2, batch_size=8, global_batch=8, lr_head=1e-2, lr_adapter=1e-3, seed=3, patience=0
    )
    cached, backbone = fresh_classifier(tiny_backbone_dir)
    pad = backbone.tokenizer.pad_token_id
    outcome = train_classifier(
        cached, train, dev, pad, Adaptation("partial", 1), settings, feature_cache_dir=tmp_path / "cache"
    )
    assert outcome.feature_cache_hits == [False, False]  # the states were computed (and stored)
    tokens, _ = fresh_classifier(tiny_backbone_dir)
    apply_adaptation(tokens, "partial", 1)
    collator = Collator(pad, tokens.padding_side)
    fit(
        Trainee(TokenForward(tokens), trainable_groups(tokens), tokens.output_kind, collator),
        train,
        dev,
        settings,
    )
    initial = fresh_classifier(tiny_backbone_dir)[0].state_dict()
    changed = 0
    for (name, a), b in zip(cached.state_dict().items(), tokens.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=name)
        changed += not torch.equal(a, initial[name])
    assert changed > 0  # training moved the weights


def test_cache_hit_and_damaged_file_recomputed(tiny_backbone_dir, labelled_prompts, tmp_path, caplog) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir)
    ids, pad = labelled_prompts[0].inputs, backbone.tokenizer.pad_token_id
    first, hit = cached_lower_states(classifier, ids, 1, pad, tmp_path)
    assert not hit
    again, hit = cached_lower_states(classifier, ids, 1, pad, tmp_path)
    assert hit
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    (path,) = Path(tmp_path).glob("blocks_*.safetensors")
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x01  # one bit of the last float's payload
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING):
        repaired, hit = cached_lower_states(classifier, ids, 1, pad, tmp_path)
    assert not hit
    assert "fails its checksum" in caplog.text
    assert all(torch.equal(a, b) for a, b in zip(first, repaired, strict=True))
