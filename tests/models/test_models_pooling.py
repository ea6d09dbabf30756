"""Last-token pooling, positions and padding: a prompt's output does not depend on how it is padded."""

from __future__ import annotations

import pytest
import torch
from rs_fixtures import fresh_classifier

from xurs_pipeline.models.classifier import last_token_index, position_ids_from_mask
from xurs_pipeline.models.collate import pad_batch


def test_pad_batch_layout_left_and_right() -> None:
    ids, mask = pad_batch([[5, 6, 7], [8]], pad_token_id=0, padding_side="left")
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    ids, mask = pad_batch([[5, 6, 7], [8]], pad_token_id=0, padding_side="right")
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]]


def test_pad_batch_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="padding_side='middle'"):
        pad_batch([[1]], 0, "middle")
    with pytest.raises(ValueError, match="sequence 1 of the batch has no tokens"):
        pad_batch([[1], []], 0)


def test_positions_and_last_index_for_both_paddings() -> None:
    left = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    right = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert position_ids_from_mask(left).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]
    assert position_ids_from_mask(right).tolist() == [[0, 1, 2, 2, 2], [0, 1, 2, 3, 4]]
    assert last_token_index(left).tolist() == [4, 4]
    assert last_token_index(right).tolist() == [2, 4]
    with pytest.raises(ValueError, match=r"rows \[1\] have no real token"):
        last_token_index(torch.tensor([[1, 0], [0, 0]]))


@pytest.mark.parametrize("side", ["left", "right"])
def test_padded_batch_matches_each_prompt_alone(tiny_backbone_dir, labelled_prompts, side: str) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir, seed=3)
    classifier.eval()
    prompts = labelled_prompts[0].inputs[:5]
    assert len({len(p) for p in prompts}) > 1, "the fixture must mix lengths so that padding happens"
    ids, mask = pad_batch(prompts, backbone.tokenizer.pad_token_id, side)
    with torch.no_grad():
        batched = classifier.classify_ids(ids, mask)
        for row, prompt in enumerate(prompts):
            one_ids, one_mask = pad_batch([prompt], backbone.tokenizer.pad_token_id, side)
            alone = classifier.classify_ids(one_ids, one_mask)
            torch.testing.assert_close(batched.masses[row], alone.masses[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(batched.raw[row], alone.raw[0], atol=1e-5, rtol=1e-5)


def test_forward_from_embeddings_equals_classify_ids(tiny_backbone_dir, labelled_prompts) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir, output_kind="mass15", head="mlp")
    ids, mask = pad_batch(labelled_prompts[0].inputs[:4], backbone.tokenizer.pad_token_id, "left")
    with torch.no_grad():
        direct = classifier(classifier.embed(ids), mask, position_ids_from_mask(mask))
        again = classifier.classify_ids(ids, mask)
    assert direct.raw.shape == (4, 15)
    assert direct.masses.shape == (4, 15)
    torch.testing.assert_close(direct.masses, again.masses, atol=0, rtol=0)
    torch.testing.assert_close(direct.masses.sum(-1), torch.ones(4), atol=1e-6, rtol=0)
