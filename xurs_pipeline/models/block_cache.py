"""Partial tuning on cached lower-block states: the frozen blocks run once per prompt, not once per epoch.

Partial tuning (``train.adaptation=partial``, Sec. 5.1) trains the last ``k`` transformer blocks, the final
norm and the head. Everything below block ``n - k`` is frozen, so the hidden state entering block ``n - k``
(``output_hidden_states[n - k]``, every position) is the same in every epoch. This module computes those
states once, stores them on disk, and trains from them through :class:`TopBlocks`: a view of the backbone
that runs only its last ``k`` blocks and final norm (the backbone's own ``forward``, so masks and rotary
positions are built exactly as in the full model). One epoch then costs ``k / n`` of the full forward and
backward (measured in BENCHMARKS.md).

A cache file holds, for n prompts of lengths L_i, ``states`` (sum L_i, d) float32 (real tokens only,
prompt after prompt) and ``lengths`` (n,) int64. It is named by a hash of everything the states depend on
(backbone weights' SHA-256, token ids, split layer, dtype, the code version ``fingerprint.code_version``)
and carries the SHA-256 of its payload, checked on every read: a damaged file is recomputed, never served.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from xurs_pipeline.fingerprint import code_version
from xurs_pipeline.io import atomic_path
from xurs_pipeline.models.adapters import decoder_blocks
from xurs_pipeline.models.classifier import RandomSetClassifier, pool_last_token, position_ids_from_mask
from xurs_pipeline.models.collate import pad_batch
from xurs_pipeline.models.heads import ClassifierOutput

BLOCK_CACHE_VERSION = 1
log = logging.getLogger(__name__)


def split_index(classifier: RandomSetClassifier, tuned_blocks: int) -> int:
    """The hidden-state index (0..n_layers) entering the first of the last ``tuned_blocks`` blocks."""
    n = len(decoder_blocks(classifier.backbone))
    if not 1 <= tuned_blocks <= n:
        raise ValueError(f"train.partial_layers={tuned_blocks}: must be in 1..{n} for this backbone")
    return n - tuned_blocks


def supports_block_cache(classifier: RandomSetClassifier) -> bool:
    """True when the head reads only the final normed state at the last token (the default features):
    then :class:`TopBlocks` reproduces ``classifier.forward`` from the cached states."""
    return classifier.pooling == "last" and classifier.layer_indices == (classifier.n_layers,)


class TopBlocks(nn.Module):
    """model(states (b, L, d), attention_mask (b, L)) -> ClassifierOutput through the last ``k`` blocks,
    the final norm and the head of ``classifier`` (sharing their parameters, so training them trains the
    classifier). ``states`` are the hidden states entering block ``n - k`` (:func:`lower_states`)."""

    def __init__(self, classifier: RandomSetClassifier, tuned_blocks: int):
        super().__init__()
        if not supports_block_cache(classifier):
            raise ValueError(
                "partial tuning from cached states needs the default features (model.feature_layers=[-1], "
                "model.pooling=last)"
            )
        split = split_index(classifier, tuned_blocks)
        backbone = classifier.backbone
        view = copy.copy(backbone)  # same parameters, own module table with only the top blocks
        view._modules = dict(backbone._modules)
        view.layers = nn.ModuleList(list(decoder_blocks(backbone))[split:])
        view.embed_tokens = None  # never used: the view starts from states
        self.view = view
        self.head = classifier.head
        self.padding_side = classifier.padding_side

    def forward(self, states: torch.Tensor, attention_mask: torch.Tensor) -> ClassifierOutput:
        out = self.view(
            inputs_embeds=states,
            attention_mask=attention_mask,
            position_ids=position_ids_from_mask(attention_mask),
            use_cache=False,
        )
        return self.head(pool_last_token(out.last_hidden_state, attention_mask))


@torch.no_grad()
def lower_states(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    split: int,
    pad_token_id: int,
    batch_size: int = 8,
) -> list[torch.Tensor]:
    """Hidden states entering block ``split`` for every prompt: a list of (L_i, d) float32 tensors (real
    tokens only), in input order. Batches are sorted by length so little padding is computed."""
    order = sorted(range(len(input_ids)), key=lambda i: len(input_ids[i]))
    out: list[torch.Tensor | None] = [None] * len(input_ids)
    was_training = classifier.training
    classifier.eval()
    device = next(classifier.parameters()).device
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        ids, mask = pad_batch([input_ids[i] for i in rows], pad_token_id, classifier.padding_side)
        ids, mask = ids.to(device), mask.to(device)
        hidden = classifier.backbone(
            inputs_embeds=classifier.embed(ids),
            attention_mask=mask,
            position_ids=position_ids_from_mask(mask),
            use_cache=False,
            output_hidden_states=True,
        ).hidden_states[split]
        for row, i in enumerate(rows):
            out[i] = hidden[row][mask[row].bool()].float().cpu()
        if (start // batch_size) % 25 == 24:
            log.info("block cache: %d / %d prompts", start + len(rows), len(input_ids))
    classifier.train(was_training)
    return out  # type: ignore[return-value]


def block_cache_key(
    backbone_sha256: str, input_ids: Sequence[Sequence[int]], split: int, padding_side: str, dtype: str
) -> str:
    """24 hex digits naming the states of ``input_ids`` entering block ``split`` of this backbone."""
    digest = hashlib.sha256()
    header = [BLOCK_CACHE_VERSION, code_version(), backbone_sha256, split, padding_side, dtype]
    digest.update(json.dumps(header).encode())
    for ids in input_ids:
        digest.update(json.dumps(list(map(int, ids))).encode() + b"\n")
    return digest.hexdigest()[:24]


def _payload_sha256(states: torch.Tensor, lengths: torch.Tensor) -> str:
    digest = hashlib.sha256(states.contiguous().numpy().tobytes())
    digest.update(lengths.contiguous().numpy().tobytes())
    return digest.hexdigest()


def _read(path: Path, n: int, width: int) -> list[torch.Tensor] | None:
    """The cached states, or None (with a log line saying why) when the file is damaged or foreign."""
    try:
        tensors = load_file(str(path))
        with open(path, "rb") as handle:  # metadata: the payload checksum written with the file
            header_len = int.from_bytes(handle.read(8), "little")
            meta = json.loads(handle.read(header_len)).get("__metadata__", {})
    except (SafetensorError, OSError, ValueError) as err:
        log.warning("block cache %s unreadable (%s): recomputing", path, err)
        return None
    states, lengths = tensors.get("states"), tensors.get("lengths")
    if (
        states is None
        or lengths is None
        or lengths.shape != (n,)
        or states.shape != (int(lengths.sum()), width)
    ):
        log.warning("block cache %s holds other shapes than expected: recomputing", path)
        return None
    if meta.get("sha256") != _payload_sha256(states, lengths):
        log.warning("block cache %s fails its checksum (damaged): recomputing", path)
        return None
    return list(torch.split(states, lengths.tolist()))


def cached_lower_states(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    tuned_blocks: int,
    pad_token_id: int,
    cache_dir: str | Path,
    batch_size: int = 8,
) -> tuple[list[torch.Tensor], bool]:
    """(states, hit): :func:`lower_states` for the last ``tuned_blocks`` blocks, read from ``cache_dir``
    when a verified file exists, else computed and stored atomically with its checksum."""
    split = split_index(classifier, tuned_blocks)
    dtype = str(next(classifier.backbone.parameters()).dtype).removeprefix("torch.")
    key = block_cache_key(
        classifier.meta.get("backbone_sha256", ""), input_ids, split, classifier.padding_side, dtype
    )
    path = Path(cache_dir) / f"blocks_{key}.safetensors"
    width = classifier.backbone.config.hidden_size
    if path.is_file():
        states = _read(path, len(input_ids), width)
        if states is not None:
            log.info("block cache hit: %s (%d prompts)", path, len(input_ids))
            return states, True
    states = lower_states(classifier, input_ids, split, pad_token_id, batch_size)
    flat = torch.cat(states).contiguous()
    lengths = torch.tensor([s.shape[0] for s in states], dtype=torch.int64)
    with atomic_path(path) as tmp:
        save_file(
            {"states": flat, "lengths": lengths},
            str(tmp),
            metadata={"sha256": _payload_sha256(flat, lengths)},
        )
    log.info("block cache written: %s (%d prompts)", path, len(input_ids))
    return states, False
