"""Task ``backbone``: the configured backbone -> ``<artifacts>/backbone/`` (plain HF directory).

Tiny random model (tokenizer trained in-process on a built-in corpus), hub id or local directory, or a
GGUF file (dequantised): all saved once as safetensors + tokenizer + ``xurs_backbone.json``, so later
stages load it from disk in about a second. Bad settings stop the stage naming the key; nothing is
written.
"""

from __future__ import annotations

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import STAGES, artifact
from xurs_pipeline.io import config_hash
from xurs_pipeline.models.backbone import TinySpec, materialize_backbone
from xurs_pipeline.tasks.runner import log

# The model.* keys the backbone depends on (its declared params, hence dvc.yaml's).
BACKBONE_KEYS = tuple(key.removeprefix("model.") for key in STAGES["backbone"].params)


def run(cfg: RootConfig) -> None:
    m = cfg.model
    out = artifact("backbone").at(cfg.paths)
    section = {k: getattr(m, k) for k in BACKBONE_KEYS}
    tiny = TinySpec(m.tiny_vocab_size, m.tiny_hidden_size, m.tiny_layers, m.tiny_heads, m.tiny_seed)
    info = materialize_backbone(
        out,
        m.backbone,
        m.source,
        dtype=m.dtype,
        gguf_package=m.gguf_package,
        gguf_file=m.gguf_file,
        tiny=tiny,
        pad_token=m.pad_token,
        padding_side=m.padding_side,
        local_files_only=m.local_files_only,
        keep_layers=m.keep_layers,
        config_hash=config_hash(section),
    )
    log.info(
        "backbone: %s %s (%d layers, hidden %d, vocab %d) -> %s",
        info["origin"]["kind"],
        info["architecture"],
        info["num_layers"],
        info["hidden_size"],
        info["vocab_size"],
        out,
    )
