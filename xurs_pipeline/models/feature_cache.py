"""Last-token features of a frozen backbone, computed once and cached on disk.

Head-only training (and prediction with a head-only classifier) needs the backbone's representation at
the last real token of each prompt only once: further epochs, seeds and head variants reuse it. The
cache file is named by a hash of everything the features depend on: the backbone weights (SHA-256 from
its directory), the token ids (which fix the data and tokenizer), the pad id, padding side, dtype and
this module's version.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import save_file

from xurs_pipeline.io import ArtifactError, atomic_path, read_safetensors
from xurs_pipeline.models.classifier import RandomSetClassifier
from xurs_pipeline.models.collate import pad_batch

FEATURE_CACHE_VERSION = 1
log = logging.getLogger(__name__)


def feature_cache_key(
    backbone_sha256: str,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    padding_side: str,
    dtype: str,
) -> str:
    """24 hex digits identifying the features of ``input_ids`` under this backbone and batching."""
    digest = hashlib.sha256()
    header = [FEATURE_CACHE_VERSION, backbone_sha256, pad_token_id, padding_side, dtype, len(input_ids)]
    digest.update(json.dumps(header).encode())
    for ids in input_ids:
        digest.update(json.dumps(list(map(int, ids))).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:24]


@torch.no_grad()
def extract_features(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    batch_size: int = 8,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Features (n, d) float32 at each prompt's last token, in input order (batches sorted by length)."""
    order = sorted(range(len(input_ids)), key=lambda i: len(input_ids[i]))
    out: torch.Tensor | None = None
    was_training = classifier.training
    classifier.eval()
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        ids, mask = pad_batch([input_ids[i] for i in rows], pad_token_id, classifier.padding_side)
        ids, mask = ids.to(device), mask.to(device)
        feats = classifier.features(classifier.embed(ids), mask).float().cpu()  # (b, d)
        if out is None:
            out = torch.empty(len(input_ids), feats.shape[-1])
        out[rows] = feats
        if (start // batch_size) % 25 == 24:
            log.info("features: %d / %d prompts", start + len(rows), len(input_ids))
    classifier.train(was_training)
    if out is None:
        raise ValueError("extract_features: no prompts")
    return out


def cached_features(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    cache_dir: str | Path,
    batch_size: int = 8,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, bool]:
    """(features (n, d), hit): read from ``cache_dir`` if present, else extract and store atomically."""
    dtype = str(next(classifier.backbone.parameters()).dtype).removeprefix("torch.")
    key = feature_cache_key(
        classifier.meta.get("backbone_sha256", ""), input_ids, pad_token_id, classifier.padding_side, dtype
    )
    path = Path(cache_dir) / f"{key}.safetensors"
    if path.is_file():
        try:
            features = read_safetensors(path)["features"]
        except (ArtifactError, KeyError) as err:
            log.warning("feature cache %s is unreadable (%s): recomputing", path, err)
        else:
            if features.shape[0] == len(input_ids):
                log.info("feature cache hit: %s (%d prompts)", path, len(input_ids))
                return features, True
            log.warning(
                "feature cache %s has %d rows, expected %d: recomputing",
                path, features.shape[0], len(input_ids),
            )  # fmt: skip
    features = extract_features(classifier, input_ids, pad_token_id, batch_size, device)
    with atomic_path(path) as tmp:
        save_file({"features": features.contiguous()}, str(tmp), metadata={"key": key})
    log.info("feature cache written: %s (%d prompts)", path, len(input_ids))
    return features, False
