"""Small models satisfying the engine's WidthModel protocol, and prepared-prompt frames for tests.

AffineMassModel: masses are an affine function of the embeddings, so width is affine and IG/EG
completeness holds exactly (up to rounding) for any quadrature whose weights sum to one.
TinyBeliefClassifier: a tiny random Llama backbone, a linear head with 14 sigmoid beliefs and the
credal conversion (App. A, Eq. 5): a non-linear model with the real output path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn

from xurs_pipeline.credal import N_BELIEFS, N_MASSES, beliefs_to_masses
from xurs_pipeline.models.tiny import build_tiny_llama

PAD_ID = 0


@dataclass
class Out:
    raw: torch.Tensor
    masses: torch.Tensor


class AffineMassModel(nn.Module):
    """masses(Z) = 1/15 + <Z, V_k> (b, 15); Σ_k V_k = 0 so masses sum to one. Mask/positions ignored."""

    def __init__(self, vocab: int = 40, hidden: int = 6, max_len: int = 24, seed: int = 0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.embedding = nn.Embedding(vocab, hidden)
        with torch.no_grad():
            self.embedding.weight.copy_(torch.randn(vocab, hidden, generator=gen))
        direction = torch.randn(N_MASSES, max_len, hidden, generator=gen)
        direction -= direction.mean(0, keepdim=True)
        self.direction = nn.Parameter(direction * 2e-3)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(input_ids)

    def forward(self, inputs_embeds, attention_mask, position_ids) -> Out:
        length = inputs_embeds.shape[1]
        masses = 1.0 / N_MASSES + torch.einsum("bld,kld->bk", inputs_embeds, self.direction[:, :length])
        return Out(masses, masses)


class TinyBeliefClassifier(nn.Module):
    """Tiny Llama -> last position -> Linear(14) -> sigmoid beliefs -> credal masses (b, 15)."""

    def __init__(
        self, vocab: int = 64, hidden: int = 32, layers: int = 2, seed: int = 0, max_positions: int = 64
    ) -> None:
        super().__init__()
        llama = build_tiny_llama(
            vocab,
            hidden_size=hidden,
            num_layers=layers,
            num_heads=4,
            seed=seed,
            max_position_embeddings=max_positions,
            pad_token_id=PAD_ID,
        )
        self.backbone = llama.model
        self.head = nn.Linear(hidden, N_BELIEFS)
        gen = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            self.head.weight.copy_(torch.randn(N_BELIEFS, hidden, generator=gen) * 0.5)
            self.head.bias.copy_(torch.randn(N_BELIEFS, generator=gen) - 1.0)
        self.max_positions = max_positions
        self.eval()

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.backbone.embed_tokens(input_ids)

    def forward(self, inputs_embeds, attention_mask, position_ids) -> Out:
        hidden = self.backbone(
            inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids
        ).last_hidden_state[:, -1]
        beliefs = torch.sigmoid(self.head(hidden))
        return Out(beliefs, beliefs_to_masses(beliefs, validate=False))


def prompts_frame(
    n_test: int = 3, n_train: int = 6, vocab: int = 40, seed: int = 0, lengths: tuple[int, int] = (8, 16)
) -> pd.DataFrame:
    """A prepared-prompts frame with random token ids (BOS=1 first) and the columns attribution reads."""
    rng = np.random.default_rng(seed)
    rows = []
    for split, count in (("train", n_train), ("test", n_test)):
        for i in range(count):
            length = int(rng.integers(*lengths))
            ids = [1, *rng.integers(3, vocab, size=length - 1).tolist()]
            rows.append(
                {
                    "record_id": f"{split}-{i}",
                    "split": split,
                    "input_ids": ids,
                    "answer_idx": int(rng.integers(0, 4)),
                    "eligible": [False] + [True] * (length - 1),
                }
            )
    return pd.DataFrame(rows)


def width_fn(model, prompt, target: int):
    """W_target of ``model`` at embeddings z (b, L, d), the prompt's mask and positions: plain autograd."""
    from xurs_pipeline.credal import credal_width

    def width(z: torch.Tensor) -> torch.Tensor:
        n = z.shape[0]
        out = model(z, prompt.attention_mask.expand(n, -1), prompt.position_ids.expand(n, -1))
        return credal_width(out.masses, validate=False)[:, target]

    return width


def dense_midpoint(width, x: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    """Σ_i (X - B) ⊙ ∇F(B + α_i (X - B)) / n at n midpoints, plain autograd (no engine), (L, d)."""
    total = torch.zeros_like(x[0])
    for start in range(0, n, 256):
        alpha = ((torch.arange(start, min(start + 256, n)) + 0.5) / n)[:, None, None]
        z = (b + alpha * (x - b)).requires_grad_(True)
        (grad,) = torch.autograd.grad(width(z).sum(), z)
        total += ((x - b) * grad).sum(0) / n
    return total


def tiny_path_problem(model, n_refs: int, target: int = 2, samples_per_call: int = 8):
    """The engine's problem for the first test prompt of :func:`prompts_frame` against its first ``n_refs``
    training prompts (fitted by position) under ``model``, explaining answer ``target``."""
    from xurs_pipeline.attribution.endpoints import input_width, prepared_widths, prompt_of
    from xurs_pipeline.attribution.estimators import PathProblem
    from xurs_pipeline.attribution.model import Objective
    from xurs_pipeline.attribution.references import prepare_training

    cpu = torch.device("cpu")
    frame = prompts_frame(n_train=3)
    ids = list(frame[frame.split == "test"]["input_ids"].iloc[0])
    train = frame[frame.split == "train"].iloc[:n_refs]
    refs = prepare_training(ids, list(train["input_ids"]), list(train["record_id"]), PAD_ID, cpu)
    prompt = prompt_of(model, ids, cpu)
    w_x, _ = input_width(model, prompt)
    prep = prepared_widths(model, prompt, refs, 4)
    objective = Objective.build((target,), "direct")
    return PathProblem(model, objective, prompt, refs, prep, w_x, samples_per_call)
