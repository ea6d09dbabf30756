"""Head-only training runs the backbone once: the second run (another seed, another head) hits the cache."""

from __future__ import annotations

import torch
from rs_fixtures import fresh_classifier, train_on

from xurs_pipeline.models.collate import pad_batch
from xurs_pipeline.models.feature_cache import cached_features, feature_cache_key
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.runner import Adaptation


def _count_backbone_calls(classifier) -> list[int]:
    calls = [0]
    classifier.backbone.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


def test_second_run_hits_cache_and_never_runs_backbone(tiny_backbone_dir, labelled_prompts, tmp_path) -> None:
    train, dev = labelled_prompts
    settings = TrainConfig(max_epochs=2, batch_size=8, global_batch=8)
    first, backbone = fresh_classifier(tiny_backbone_dir, seed=1)
    calls = _count_backbone_calls(first)
    outcome = train_on(
        first, backbone, (train, dev), Adaptation("head_only"), settings, tmp_path, feature_batch_size=5
    )
    assert outcome.feature_cache_hits == [False, False]
    assert calls[0] == 5 + 2  # ceil(24 / 5) + ceil(8 / 5) batches, once; epochs reuse the features
    second, _ = fresh_classifier(tiny_backbone_dir, seed=2, head="mlp")
    calls = _count_backbone_calls(second)
    settings = TrainConfig(max_epochs=1, global_batch=8, seed=17)
    outcome = train_on(second, backbone, (train, dev), Adaptation("head_only"), settings, tmp_path)
    assert outcome.feature_cache_hits == [True, True]
    assert calls[0] == 2  # one batch of sampled prompts per file, recomputed to verify it (no epoch runs it)
    assert len(list(tmp_path.glob("*.safetensors"))) == 2


def test_cached_features_equal_direct_last_token_features(
    tiny_backbone_dir, labelled_prompts, tmp_path
) -> None:
    classifier, backbone = fresh_classifier(tiny_backbone_dir)
    prompts = labelled_prompts[0].inputs[:6]
    feats, hit = cached_features(classifier, prompts, backbone.tokenizer.pad_token_id, tmp_path, batch_size=4)
    again, hit_again = cached_features(classifier, prompts, backbone.tokenizer.pad_token_id, tmp_path)
    assert (hit, hit_again) == (False, True)
    torch.testing.assert_close(feats, again, atol=0, rtol=0)
    with torch.no_grad():
        for row, prompt in enumerate(prompts):
            ids, mask = pad_batch([prompt], backbone.tokenizer.pad_token_id)
            direct = classifier.features(classifier.embed(ids), mask)[0]
            torch.testing.assert_close(feats[row], direct, atol=1e-5, rtol=1e-5)


def test_cache_key_depends_on_backbone_ids_and_padding() -> None:
    base = feature_cache_key("sha-a", [[1, 2, 3]], 0, "left", "float32")
    assert base == feature_cache_key("sha-a", [[1, 2, 3]], 0, "left", "float32")
    variants = [
        feature_cache_key("sha-b", [[1, 2, 3]], 0, "left", "float32"),
        feature_cache_key("sha-a", [[1, 2, 4]], 0, "left", "float32"),
        feature_cache_key("sha-a", [[1, 2], [3]], 0, "left", "float32"),
        feature_cache_key("sha-a", [[1, 2, 3]], 0, "right", "float32"),
        feature_cache_key("sha-a", [[1, 2, 3]], 0, "left", "bfloat16"),
        feature_cache_key("sha-a", [[1, 2, 3]], 5, "left", "float32"),
    ]
    assert len({base, *variants}) == 1 + len(variants)


def test_a_planted_file_with_a_valid_checksum_is_recomputed_not_served(
    tiny_backbone_dir, labelled_prompts, tmp_path, caplog
) -> None:
    """The checksum catches damage, not substitution: a file holding other prompts' states, written with a
    valid checksum under these prompts' name, is caught by the recomputed sample and never served."""
    from xurs_pipeline.io import write_safetensors
    from xurs_pipeline.models.feature_cache import extract_pooled

    classifier, backbone = fresh_classifier(tiny_backbone_dir)
    pad = backbone.tokenizer.pad_token_id
    prompts, others = labelled_prompts[0].inputs[:12], labelled_prompts[0].inputs[12:24]
    honest, hit = cached_features(classifier, prompts, pad, tmp_path)
    (path,) = tmp_path.glob("*.safetensors")
    write_safetensors({"pooled": extract_pooled(classifier, others, pad)}, path, {"key": path.stem})
    served, hit = cached_features(classifier, prompts, pad, tmp_path)
    assert not hit
    assert "cached states differ from a recomputation" in caplog.text
    torch.testing.assert_close(served, honest, atol=1e-5, rtol=1e-5)
    again, hit = cached_features(classifier, prompts, pad, tmp_path)  # the recomputed file is served
    assert hit
    torch.testing.assert_close(again, honest, atol=1e-5, rtol=1e-5)
