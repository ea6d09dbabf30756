"""Planted two-cue models on the embeddings: the width's dependence on each cue's tokens is set by hand, so
a method's answer is checked with no intervention at all (issue 53's yardstick (d); AtP*'s saturation and
cancellation).

A prompt of ``LENGTH`` positions holds cue 1 at ``CUES[0]`` and cue 2 at ``CUES[1]``; token ``t`` carries
``a_t`` along hidden direction 0 (cue 1's tokens) or ``b_t`` along direction 1 (cue 2's), every other
coordinate random and read by nothing. The model passes the embeddings through one identity block (the
layer ``layer_ig`` reads), sums directions 0 and 1 over the positions, ``s_1 = sum_t h_t0``,
``s_2 = sum_t h_t1``, and puts mass ``sigmoid(z)`` on the explained option ``{0}`` and the rest on Theta, so
the option's width is ``W = 1 - sigmoid(z(s_1, s_2))`` (Eq. 2). Mechanisms, each with the cue the width
depends on by construction (``truth``):

- ``linear``: ``z = 2 s_1 + 0.5 s_2 - 1``: cue 1;
- ``saturated``: ``z = 3 tanh(1.5 s_1) + 0.5 s_2 - 3``, cue 1's two tokens at 1 each: cue 1 moves ``z`` by
  2.98 (cue 2 by 0.5), yet ``z`` is flat in ``s_1`` near the input (slope 0.04) and one cue-1 token alone
  moves it by 0.27 (the other stands in for it): cue 1, missed by a gradient or one token at a time;
- ``cancelling``: ``z = 2 s_1 + 0.3 s_2``, cue 1's tokens at +1 and -1: each moves ``z`` by 2 (cue 2's
  token by 0.3), the two together by 0: cue 1, missed by a method that credits the cue as a whole;
- ``interaction``: ``z = 3 s_1 s_2 + 0.6 s_2 - 1.8``: cue 2 (its tokens move ``z`` by 3.6, cue 1's by 3).

A planted model has no tokens: every method that reads a reference reads the zero embeddings there,
whatever reference set its entry names (``attribution/variants.py``), so a set is judged on the trained
models only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

from xurs_pipeline.attribution.methods import Problem, method_for
from xurs_pipeline.attribution.variants import swap_variant
from xurs_pipeline.credal import FOCAL_SETS, N_MASSES
from xurs_pipeline.evaluation.swap.readings import cue_spans, scores_reading

LENGTH, HIDDEN = 10, 6
CUES = ((3, 4), (7, 8))
OTHER_SET_LOGIT = -30.0


@dataclass(frozen=True)
class Mechanism:
    """``strengths``: per cue its tokens' values along its direction; ``truth``: the cue the width depends
    on (module docstring)."""

    name: str
    strengths: tuple[tuple[float, ...], tuple[float, ...]]
    truth: int

    def z(self, s1: torch.Tensor, s2: torch.Tensor) -> torch.Tensor:
        if self.name == "linear":
            return 2 * s1 + 0.5 * s2 - 1
        if self.name == "saturated":
            return 3 * torch.tanh(1.5 * s1) + 0.5 * s2 - 3
        if self.name == "cancelling":
            return 2 * s1 + 0.3 * s2
        return 3 * s1 * s2 + 0.6 * s2 - 1.8


MECHANISMS = (
    Mechanism("linear", ((1.0, 0.0), (1.0, 0.0)), 1),
    Mechanism("saturated", ((1.0, 1.0), (1.0, 0.0)), 1),
    Mechanism("cancelling", ((1.0, -1.0), (1.0, 0.0)), 1),
    Mechanism("interaction", ((1.0, 0.0), (1.0, 0.0)), 2),
)


class PlantedCues(nn.Module):
    """masses (b, 15) of embeds (b, L, d): the module docstring's model under one mechanism."""

    def __init__(self, mechanism: Mechanism) -> None:
        super().__init__()
        self.mechanism = mechanism
        self.block = nn.Linear(HIDDEN, HIDDEN, bias=False, dtype=torch.float64)
        with torch.no_grad():
            self.block.weight.copy_(torch.eye(HIDDEN, dtype=torch.float64))
        self.answer_set = FOCAL_SETS.index((0,))

    def forward(self, embeds: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        h = self.block(embeds) * mask[..., None].to(embeds.dtype)
        z = self.mechanism.z(h[..., 0].sum(-1), h[..., 1].sum(-1))
        logits = torch.full((len(z), N_MASSES), OTHER_SET_LOGIT, dtype=z.dtype)
        logits[:, self.answer_set] = z
        logits[:, N_MASSES - 1] = 0.0
        return torch.softmax(logits, dim=-1)

    def embeds(self, seed: int = 0) -> torch.Tensor:
        """The prompt's embeddings (1, L, d): each cue's strengths on its direction, noise elsewhere."""
        x = torch.randn(1, LENGTH, HIDDEN, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        x[..., :2] = 0.0
        for k, (positions, values) in enumerate(zip(CUES, self.mechanism.strengths, strict=True)):
            for p, v in zip(positions, values, strict=True):
                x[0, p, k] = v
        return x


def method_recovery(methods: Sequence[str], layer_ig_steps: int = 32) -> pd.DataFrame:
    """Per (token method, mechanism): the cue it ranks first (0 on a tie), the planted truth and whether
    they match."""
    rows = []
    for mechanism in MECHANISMS:
        model = PlantedCues(mechanism)
        x = model.embeds()
        for name in methods:
            cfg = swap_variant(name, layer_ig_steps=layer_ig_steps).config  # every reference set: zero here
            method = method_for(cfg)
            problem = Problem(
                model,
                x,
                0,
                references=torch.zeros_like(x),
                layer=model.block,
                spans=cue_spans(LENGTH, CUES),
                reuse_prefix=False,
            )
            scores = method.attribute(problem)
            top = scores_reading(scores, CUES).top
            rows.append(
                {
                    "method": name,
                    "mechanism": mechanism.name,
                    "top": top,
                    "truth": mechanism.truth,
                    "recovered": top == mechanism.truth,
                }
            )
    return pd.DataFrame(rows, columns=["method", "mechanism", "top", "truth", "recovered"])
