"""The backbone config of ``model.*`` and the classifier's parameter counts, on the meta device.

Nothing here loads weights: a local directory or the hub cache gives ``config.json``; the paper's hub ids
fall back to transformers' defaults for their architectures (``SmolLM3Config()`` is SmolLM3-3B,
``LlamaConfig()`` Llama-2-7B); a GGUF file's header gives its config; ``tiny`` is built from its keys.
So a 7B plan takes seconds and no memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch
from accelerate import init_empty_weights
from transformers import AutoConfig, AutoModel, LlamaConfig, PretrainedConfig, SmolLM3Config

from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation
from xurs_pipeline.models.backbone import TORCH_DTYPES
from xurs_pipeline.models.classifier import RandomSetClassifier, feature_width
from xurs_pipeline.models.config import ModelConfig
from xurs_pipeline.models.heads import RandomSetHead
from xurs_pipeline.train.config import TrainConfig

# Hub ids whose architecture defaults in transformers are exactly the model (checked in tests/paper).
KNOWN_HUB_CONFIGS: dict[str, type[PretrainedConfig]] = {
    "HuggingFaceTB/SmolLM3-3B": SmolLM3Config,
    "meta-llama/Llama-2-7b-hf": LlamaConfig,
}


@dataclass(frozen=True)
class ParameterCounts:
    """Parameters of the classifier: backbone (without LM head), head, and the trainable ones by group."""

    backbone: int
    head: int
    adapter: int  # LoRA adapter or tuned blocks (0 for head_only)
    backbone_dtype_bytes: int

    @property
    def total(self) -> int:
        return self.backbone + self.head + (self.adapter if self.adapter_is_extra else 0)

    @property
    def trainable(self) -> int:
        return self.head + self.adapter

    adapter_is_extra: bool = False  # LoRA adds parameters; partial tuning trains existing ones


@lru_cache(maxsize=4)
def _gguf_config(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """A GGUF file's config values (its whole header is parsed, the tokenizer's vocabulary included:
    seconds for SmolLM2), once a process per file, modification time and size. Callers copy before changing
    it."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    values: dict[str, Any] = load_gguf_checkpoint(path, return_tensors=False)["config"]
    return values


def backbone_config(model: ModelConfig) -> PretrainedConfig:
    """The config of ``model.backbone``/``model.source`` without loading weights (``model.keep_layers``
    applied). FileNotFoundError naming ``model.source`` when no config can be had offline."""
    if model.backbone == "tiny":
        from xurs_pipeline.models.tiny import TINY_CORPUS, tiny_llama_config, train_tiny_tokenizer

        vocab = len(train_tiny_tokenizer(TINY_CORPUS, vocab_size=model.tiny_vocab_size))
        config: PretrainedConfig = tiny_llama_config(
            vocab, model.tiny_hidden_size, model.tiny_layers, model.tiny_heads
        )
    elif model.backbone == "gguf":
        from xurs_pipeline.models.gguf import resolve_gguf_path

        path = resolve_gguf_path(model.source, model.gguf_package, model.gguf_file)
        stat = path.stat()
        values = dict(_gguf_config(str(path), stat.st_mtime_ns, stat.st_size))
        config = AutoConfig.for_model(values.pop("model_type"), **values)
    else:
        try:
            config = AutoConfig.from_pretrained(model.source, local_files_only=True)
        except OSError as err:
            if model.source not in KNOWN_HUB_CONFIGS:
                raise FileNotFoundError(
                    f"model.source={model.source!r}: no config.json here (not a local directory, not in the "
                    f"hub cache) and not one of the paper's models {sorted(KNOWN_HUB_CONFIGS)}"
                ) from err
            config = KNOWN_HUB_CONFIGS[model.source]()
    if model.keep_layers:
        config.num_hidden_layers = model.keep_layers
        if getattr(config, "layer_types", None):
            config.layer_types = list(config.layer_types)[: model.keep_layers]
    return config


def meta_classifier(config: PretrainedConfig, model: ModelConfig, train: TrainConfig) -> RandomSetClassifier:
    """The classifier of ``model``/``train`` on the meta device, adapted as ``train.adaptation`` says."""
    width = feature_width(config.hidden_size, model.feature_layers, model.pooling)
    with init_empty_weights():
        backbone = AutoModel.from_config(config, dtype=TORCH_DTYPES[model.dtype])
        head = RandomSetHead(
            width,
            model.output_kind,
            model.head,
            model.head_hidden,
            model.conversion,
            depth=model.head_depth,
            dropout=model.head_dropout,
        )
        classifier = RandomSetClassifier(
            backbone, head, model.padding_side, model.feature_layers, model.pooling
        )
        lora = LoraSpec(train.lora_rank, train.lora_alpha, train.lora_dropout, list(train.lora_targets))
        apply_adaptation(classifier, train.adaptation, train.partial_layers, lora)
    return classifier


def count_parameters(config: PretrainedConfig, model: ModelConfig, train: TrainConfig) -> ParameterCounts:
    """Parameter counts of the classifier ``model``/``train`` build on a backbone of ``config``."""
    classifier = meta_classifier(config, model, train)
    head = sum(p.numel() for p in classifier.head.parameters())
    backbone_params = list(classifier.backbone.named_parameters())
    adapter = sum(p.numel() for _, p in backbone_params if p.requires_grad)
    lora = sum(p.numel() for name, p in backbone_params if "lora_" in name)
    base = sum(p.numel() for _, p in backbone_params) - lora
    return ParameterCounts(
        backbone=base,
        head=head,
        adapter=adapter,
        backbone_dtype_bytes=torch.finfo(TORCH_DTYPES[model.dtype]).bits // 8,
        adapter_is_extra=lora > 0,
    )
