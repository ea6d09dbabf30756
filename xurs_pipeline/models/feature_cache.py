"""Pooled hidden states of a frozen backbone, computed once and cached on disk.

Head-only training (and prediction with a head-only classifier) needs the backbone's representations of
each prompt only once: further epochs, seeds, head variants and feature choices reuse them. A cache file
holds, per prompt, every layer's state pooled both ways, ``pooled`` (n, n_layers + 1, 2, d) float32
(``RandomSetClassifier.pooled_states``, not normalised), so any ``model.feature_layers`` /
``model.pooling`` reads its layers from the same file (``features_from_pooled``). Size: 4 bytes x
(n_layers + 1) x 2 x d per prompt (SmolLM2-135M: 143 KB; Llama-2-7B: 1.1 MB). The file is named by a hash
of everything the states depend on: the backbone weights (SHA-256 from its directory), the token ids
(which fix the data and tokenizer), the pad id, padding side, dtype, this module's version and the code
version (``fingerprint.code_version``). The file carries the SHA-256 of its tensor bytes, checked on
every read: a damaged file is recomputed (with a log line saying why), never served.

A checksum catches damage, not substitution: anyone who can write the cache can write a file with a valid
checksum under the right name. So every read also recomputes :data:`VERIFY_PROMPTS` prompts drawn at
random (``random.SystemRandom``: a planted file cannot know which) and compares their pooled states with
the file's (relative L2 difference per prompt within :data:`VERIFY_TOLERANCE` of the backbone's dtype);
a file that disagrees is recomputed with a log line, never served. A file whose every row was replaced is
always caught; one with m of n rows replaced escapes with probability about (1 - m/n)^8. The cost is one
backbone batch of 8 prompts per read (BENCHMARKS.md: the feature-cache verification).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from xurs_pipeline.fingerprint import code_version
from xurs_pipeline.io import ArtifactError, check_safetensors, verify_checksum, write_safetensors
from xurs_pipeline.models.classifier import POOLED_KINDS, RandomSetClassifier
from xurs_pipeline.models.collate import pad_batch

FEATURE_CACHE_VERSION = 3  # 1: final-layer last-token features (n, d); 2: no checksum
VERIFY_PROMPTS = 8  # prompts recomputed on every read (one backbone batch)
# Largest relative L2 difference between a cached prompt's pooled states and a recomputation in another
# batch (other padding), per backbone dtype: float32 agrees to ~1e-6, half precision to its rounding.
VERIFY_TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 5e-2}
log = logging.getLogger(__name__)


def feature_cache_key(
    backbone_sha256: str,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    padding_side: str,
    dtype: str,
) -> str:
    """24 hex digits identifying the pooled states of ``input_ids`` under this backbone and batching."""
    digest = hashlib.sha256()
    header = [
        FEATURE_CACHE_VERSION,
        code_version(),
        backbone_sha256,
        pad_token_id,
        padding_side,
        dtype,
        len(input_ids),
    ]
    digest.update(json.dumps(header).encode())
    for ids in input_ids:
        digest.update(json.dumps(list(map(int, ids))).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:24]


@torch.no_grad()
def extract_pooled(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    batch_size: int = 8,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Pooled states (n, n_layers + 1, 2, d) float32 of every prompt, in input order (batches sorted by
    length, so little padding)."""
    if not input_ids:
        raise ValueError("extract_pooled: no prompts")
    order = sorted(range(len(input_ids)), key=lambda i: len(input_ids[i]))
    out: torch.Tensor | None = None
    was_training = classifier.training
    classifier.eval()
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        ids, mask = pad_batch([input_ids[i] for i in rows], pad_token_id, classifier.padding_side)
        ids, mask = ids.to(device), mask.to(device)
        pooled = classifier.pooled_states(classifier.embed(ids), mask).float().cpu()  # (b, layers, 2, d)
        if out is None:
            out = torch.empty(len(input_ids), *pooled.shape[1:])
        out[rows] = pooled
        if (start // batch_size) % 25 == 24:
            log.info("features: %d / %d prompts", start + len(rows), len(input_ids))
    classifier.train(was_training)
    assert out is not None
    return out


def _read_layers(path: Path, shape: tuple[int, ...], layers: Sequence[int]) -> dict[int, torch.Tensor]:
    """{layer: (n, 2, d)} read from a cache file, only the requested layers; ArtifactError if the file is
    damaged (header, size or SHA-256 checksum), has no checksum, or its ``pooled`` tensor is not of
    ``shape``."""
    check_safetensors(path)
    if not verify_checksum(path):
        raise ArtifactError(f"{path}: no SHA-256 checksum in its metadata (not written by this version)")
    try:
        with safe_open(str(path), framework="pt") as handle:
            pooled = handle.get_slice("pooled")
            if tuple(pooled.get_shape()) != shape:
                raise ArtifactError(f"{path}: pooled states of shape {pooled.get_shape()}, expected {shape}")
            return {layer: pooled[:, layer] for layer in layers}
    except (SafetensorError, OSError, ValueError) as err:
        raise ArtifactError(f"{path}: corrupt or truncated safetensors file ({err})") from err


def _verify_sample(
    path: Path,
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    device: torch.device | str,
    dtype: str,
) -> None:
    """Recompute :data:`VERIFY_PROMPTS` random prompts' pooled states (k, n_layers + 1, 2, d) and raise
    ArtifactError naming the first whose cached states differ beyond the dtype's tolerance."""
    rows = sorted(random.SystemRandom().sample(range(len(input_ids)), min(VERIFY_PROMPTS, len(input_ids))))
    fresh = extract_pooled(classifier, [input_ids[i] for i in rows], pad_token_id, len(rows), device)
    with safe_open(str(path), framework="pt") as handle:
        pooled = handle.get_slice("pooled")
        cached = torch.stack([pooled[i : i + 1][0] for i in rows])
    tolerance = VERIFY_TOLERANCE.get(dtype, VERIFY_TOLERANCE["float32"])
    difference = (cached - fresh).flatten(1).norm(dim=1) / fresh.flatten(1).norm(dim=1).clamp_min(1e-12)
    worst = int(difference.argmax())
    if not difference[worst] <= tolerance:  # NaN fails too
        raise ArtifactError(
            f"{path}: prompt {rows[worst]}'s cached states differ from a recomputation (relative difference "
            f"{float(difference[worst]):.3g} > {tolerance:g} for {dtype}): not the features of these prompts"
        )


def cached_features(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    cache_dir: str | Path,
    batch_size: int = 8,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, bool]:
    """(features (n, D), hit): the classifier's features (its ``feature_layers`` and ``pooling``) from
    the pooled states in ``cache_dir`` if present, else extracted (every layer) and stored atomically."""
    dtype = str(next(classifier.backbone.parameters()).dtype).removeprefix("torch.")
    key = feature_cache_key(
        classifier.meta.get("backbone_sha256", ""), input_ids, pad_token_id, classifier.padding_side, dtype
    )
    path = Path(cache_dir) / f"{key}.safetensors"
    hidden_size = classifier.backbone.config.hidden_size
    shape = (len(input_ids), classifier.n_layers + 1, len(POOLED_KINDS), hidden_size)
    if path.is_file():
        try:
            pooled = _read_layers(path, shape, classifier.layer_indices)
            _verify_sample(path, classifier, input_ids, pad_token_id, device, dtype)
        except ArtifactError as err:
            log.warning("feature cache %s is unreadable (%s): recomputing", path, err)
        else:
            log.info("feature cache hit: %s (%d prompts)", path, len(input_ids))
            return classifier.features_from_pooled(pooled), True
    everything = extract_pooled(classifier, input_ids, pad_token_id, batch_size, device)
    write_safetensors({"pooled": everything}, path, {"key": key})
    log.info("feature cache written: %s (%d prompts)", path, len(input_ids))
    pooled = {layer: everything[:, layer] for layer in classifier.layer_indices}
    return classifier.features_from_pooled(pooled), False
