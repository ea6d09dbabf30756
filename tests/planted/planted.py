"""A planted positive control: a model whose width is, by construction, a known function of known tokens.

``PlantedClueModel`` satisfies the engine's ``WidthModel`` protocol. Every token embedding is orthogonal to
a fixed unit direction ``u`` except the CLUE tokens, whose embeddings carry ``strength`` along ``u``. The
clue score of a prompt is ``s(Z) = sum_t <P Z_t, u>`` over its positions, where ``P`` (the ``blocks[0]``
linear map) starts as the identity, and the masses are a softmax over the 15 answer sets of

    z({answer}) = gain * s,    z(Theta) = 0,    z(S) = -30 for every other set S,

so m({answer}) = sigmoid(gain * s) and every option's width is W = m(Theta) = 1 - sigmoid(gain * s) (Eq. 2:
Pl({c}) - Bel({c}) is the mass of the sets that contain c and more, here Theta alone, up to e^-30).

What the chain must therefore find, exactly:
- the attribution of every non-clue token is 0 (its embedding and the zero reference are orthogonal to
  ``u``); each clue token gets the same share of ``F(X) - F(0) = sigmoid(0) - sigmoid(gain * s(X))``;
  the sign is negative (a clue makes the model certain: it lowers the width);
- zero-masking a clue token raises the width (D > 0); masking any other token changes nothing (D = 0).

Re-initialising ``blocks[0]`` (the model-randomisation check's cascade) mixes every direction into the
score, so the attributions must move away from the clue tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn

from xurs_pipeline.credal import FOCAL_SETS, N_MASSES

CLUE_IDS = (5, 6)  # token ids that carry the clue
BOS_ID = 1
OTHER_SET_LOGIT = -30.0


@dataclass
class PlantedOutput:
    raw: torch.Tensor  # (b, 15) logits
    masses: torch.Tensor  # (b, 15)


class PlantedClueModel(nn.Module):
    """masses (b, 15) = softmax(z(s)) with s = sum_t <P Z_t, u> (module docstring); mask/positions ignored
    except that padding positions (mask 0) do not count."""

    def __init__(
        self,
        vocab: int = 40,
        hidden: int = 8,
        answer: int = 0,
        strength: float = 1.0,
        gain: float = 1.5,
        seed: int = 0,
    ) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        u = torch.zeros(hidden)
        u[0] = 1.0
        table = torch.randn(vocab, hidden, generator=gen)
        table[:, 0] = 0.0  # every token orthogonal to u ...
        table[list(CLUE_IDS), 0] = strength  # ... except the clue tokens
        self.embedding = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([nn.Linear(hidden, hidden, bias=False)])
        self.head = nn.Linear(1, 1, bias=False)  # the gain
        with torch.no_grad():
            self.embedding.weight.copy_(table)
            self.blocks[0].weight.copy_(torch.eye(hidden))
            self.head.weight.fill_(gain)
        self.register_buffer("u", u)
        self.answer_set = FOCAL_SETS.index((answer,))
        self.full_set = N_MASSES - 1
        self.eval()

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(input_ids)

    def score(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """s (b,) = sum over real positions of <P Z_t, u>."""
        projected = self.blocks[0](inputs_embeds) @ self.u  # (b, L)
        return (projected * attention_mask.to(projected.dtype)).sum(-1)

    def forward(self, inputs_embeds, attention_mask, position_ids) -> PlantedOutput:
        s = self.score(inputs_embeds, attention_mask)
        logits = torch.full((s.shape[0], N_MASSES), OTHER_SET_LOGIT, dtype=s.dtype, device=s.device)
        logits[:, self.answer_set] = self.head(s[:, None])[:, 0]
        logits[:, self.full_set] = 0.0
        return PlantedOutput(logits, torch.softmax(logits, dim=-1))

    def exact_width(self, input_ids: list[int]) -> float:
        """W(X) = 1 - sigmoid(gain * s(X)) from the prompt's clue count (up to e^-30)."""
        strength = float(self.embedding.weight[CLUE_IDS[0], 0].detach())
        s = strength * sum(t in CLUE_IDS for t in input_ids)
        return float(1.0 - torch.sigmoid(torch.tensor(float(self.head.weight.detach()) * s)))


def planted_prompts(n_test: int = 8, n_train: int = 8, vocab: int = 40, seed: int = 0) -> pd.DataFrame:
    """Prepared-prompt rows: test prompts hold 1-2 clue tokens at known positions (``clue_positions``),
    training prompts hold none. Lengths 12-20; position 0 is BOS (not eligible), every other position
    eligible for zero-masking."""
    rng = np.random.default_rng(seed)
    ordinary = [t for t in range(3, vocab) if t not in CLUE_IDS]
    rows = []
    for split, count in (("train", n_train), ("test", n_test)):
        for i in range(count):
            length = int(rng.integers(12, 21))
            ids = [BOS_ID, *rng.choice(ordinary, size=length - 1).tolist()]
            clues: list[int] = []
            if split == "test":
                clues = sorted(rng.choice(np.arange(1, length), size=1 + i % 2, replace=False).tolist())
                for position in clues:
                    ids[position] = CLUE_IDS[position % 2]
            rows.append(
                {
                    "record_id": f"{split}-{i}",
                    "split": split,
                    "input_ids": ids,
                    "answer_idx": 0,
                    "eligible": [False] + [True] * (length - 1),
                    "clue_positions": clues,
                    "sections": ["special"] + ["question"] * (length - 1),
                    "case_positions": list(range(1, length)),
                }
            )
    return pd.DataFrame(rows)
