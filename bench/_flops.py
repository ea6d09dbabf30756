"""Cost model of one attribution gradient sample on a Llama-family decoder: FLOPs and saved activations.

FLOP count (multiply and add counted as 2 FLOPs; T tokens; per layer: q/o projections d x (h * hd),
k/v projections d x (h_kv * hd), gate/up/down d x f; P = layers x that = the matmul weights outside
the embedding, plus LoRA's r x (in + out) per adapted projection when present):

- forward:  2 P T  (every weight multiplies every token once)
            + 4 layers T^2 h hd  (Q K^T and P V, the full T x T square; a causal kernel may skip half)
- backward to the activations only (the engine differentiates w.r.t. the input embeddings; weights
  are frozen, so the weight-gradient GEMMs, another 2 P T, are skipped):
            2 P T  (grad_input = grad_output W^T, same size as the forward GEMM)
            + 8 layers T^2 h hd  (dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q)
- one gradient sample = forward + backward = 4 P T + 12 layers T^2 h hd.

The embedding lookup costs no FLOPs; the random-set head (d x 15 at one token) and the element-wise
work (norms, rotary, softmax, SiLU, residual adds) are left out: they are memory-bound and small
next to the GEMMs. A forward-only width evaluation costs the forward line alone.

Saved activations (what autograd keeps between forward and backward) are measured, not modelled:
:func:`saved_activation_bytes` runs Hugging Face's own implementation of the architecture on the CPU
with 1 and 2 layers and counts the distinct tensors autograd saves (weights excluded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ArchSpec:
    """Shapes of a Llama-family decoder (from its Hugging Face config)."""

    name: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int

    @classmethod
    def from_config(cls, name: str, config: Any) -> ArchSpec:
        heads = config.num_attention_heads
        return cls(
            name=name,
            layers=config.num_hidden_layers,
            hidden=config.hidden_size,
            intermediate=config.intermediate_size,
            heads=heads,
            kv_heads=getattr(config, "num_key_value_heads", None) or heads,
            head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
            vocab=config.vocab_size,
        )

    def projection_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each linear projection of one layer."""
        d, f, q, kv = (
            self.hidden,
            self.intermediate,
            self.heads * self.head_dim,
            self.kv_heads * self.head_dim,
        )
        return {
            "q_proj": (d, q),
            "k_proj": (d, kv),
            "v_proj": (d, kv),
            "o_proj": (q, d),
            "gate_proj": (d, f),
            "up_proj": (d, f),
            "down_proj": (f, d),
        }

    def matmul_params(self) -> int:
        """P: weights of all layers' linear projections (embedding and norms excluded)."""
        return self.layers * sum(i * o for i, o in self.projection_shapes().values())

    def lora_params(self, rank: int) -> int:
        """LoRA adapter weights r x (in + out) on every projection of every layer (Table 4 targets)."""
        return self.layers * sum(rank * (i + o) for i, o in self.projection_shapes().values())

    def total_params(self, tied: bool = True) -> int:
        """Weights of the whole backbone (embedding once if tied), norms included."""
        embed = self.vocab * self.hidden * (1 if tied else 2)
        return self.matmul_params() + embed + self.layers * 2 * self.hidden + self.hidden


@dataclass(frozen=True)
class FlopCount:
    forward: float
    backward: float

    @property
    def total(self) -> float:
        return self.forward + self.backward


def gradient_sample_flops(spec: ArchSpec, tokens: int, lora_rank: int = 0) -> FlopCount:
    """FLOPs of one gradient sample w.r.t. the input embeddings (module docstring)."""
    p = spec.matmul_params() + spec.lora_params(lora_rank)
    attention = spec.layers * tokens**2 * spec.heads * spec.head_dim
    return FlopCount(forward=2.0 * p * tokens + 4.0 * attention, backward=2.0 * p * tokens + 8.0 * attention)


def forward_flops(spec: ArchSpec, tokens: int, lora_rank: int = 0) -> float:
    """FLOPs of one forward-only width evaluation."""
    return gradient_sample_flops(spec, tokens, lora_rank).forward


def _saved_bytes(config: Any, layers: int, tokens: int, dtype: torch.dtype) -> int:
    from transformers import AutoModel

    config.num_hidden_layers = layers
    torch.manual_seed(0)
    model = AutoModel.from_config(config, dtype=dtype).eval().requires_grad_(False)
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = max(saved.get(storage.data_ptr(), 0), storage.nbytes())
        return t

    z = torch.randn(1, tokens, config.hidden_size, dtype=dtype).requires_grad_(True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(inputs_embeds=z, use_cache=False)
    return sum(saved.values())


def saved_activation_bytes(config: Any, dtype: torch.dtype, tokens: int = 32) -> tuple[float, float]:
    """(bytes per token per layer, bytes per token outside the layers) that autograd saves when the
    input embeddings require grad and the weights do not, for HF's implementation of ``config``
    (``config._attn_implementation`` as set; SDPA by default). Measured on the CPU at ``tokens`` tokens
    with 1 and 2 layers; per-token figures hold for any length with SDPA (no T x T matrix is saved).
    """
    one = _saved_bytes(config, 1, tokens, dtype)
    two = _saved_bytes(config, 2, tokens, dtype)
    per_layer = (two - one) / tokens
    return per_layer, one / tokens - per_layer
