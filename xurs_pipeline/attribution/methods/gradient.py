"""The methods that read gradients of F_c at the prompt or along one path (captum's implementations).

- ``grad_l2``: ``||dF/dx_i||_2`` per token (captum ``Saliency``); signed = magnitude; 1 gradient.
- ``grad_x_input``: ``sum_h x_ih dF/dx_ih`` per token, magnitude its absolute value (captum
  ``InputXGradient``); 1 gradient.
- ``layer_ig``: IG of F_c with respect to the output of the block halfway up, from the one reference
  (captum ``LayerIntegratedGradients``, ``attribution.layer_ig_steps`` Gauss-Legendre points), summed over
  hidden per position, magnitude its absolute value; completeness: its total against ``F(X) - F(B)``
  (Eq. 9 on the layer), from 2 more forwards.
"""

from __future__ import annotations

import numpy as np
import torch
from captum.attr import InputXGradient, LayerIntegratedGradients, Saliency
from torch import nn

from xurs_pipeline.attribution.inputs import AttributionInputError
from xurs_pipeline.attribution.methods.base import Counter, TokenMethod, TokenProblem, TokenScores
from xurs_pipeline.attribution.model import block_list_name


def _numpy(values: torch.Tensor) -> np.ndarray:
    return values.detach().double().cpu().numpy()


class GradientL2(TokenMethod):
    name = "grad_l2"

    def scores(self, problem: TokenProblem) -> TokenScores:
        counter = Counter()
        x = problem.embeds.detach().requires_grad_(True)
        grad = Saliency(problem.function(counter)).attribute(x, abs=False)[0]  # (L, d)
        norm = _numpy(grad.norm(dim=-1))
        return TokenScores(norm, norm, counter.forwards, counter.grad_evals, coords=grad.detach().float())


class GradientXInput(TokenMethod):
    name = "grad_x_input"

    def scores(self, problem: TokenProblem) -> TokenScores:
        counter = Counter()
        x = problem.embeds.detach().requires_grad_(True)
        coords = InputXGradient(problem.function(counter)).attribute(x)[0]  # (L, d)
        signed = _numpy(coords.sum(-1))
        return TokenScores(signed, np.abs(signed), counter.forwards, counter.grad_evals,
                           coords=coords.detach().float())  # fmt: skip


def middle_block(model: nn.Module) -> nn.Module:
    """The block halfway up the model's blocks (its longest ``nn.ModuleList``), ``(n - 1) // 2`` of ``n``
    (``layer_ig``'s layer): never the last one when there are two or more, whose output reaches the head
    only at the pooled position."""
    blocks = model.get_submodule(block_list_name(model))
    return blocks[(len(blocks) - 1) // 2]


class LayerIG(TokenMethod):
    name = "layer_ig"

    def scores(self, problem: TokenProblem) -> TokenScores:
        if problem.layer is None or problem.reference is None:
            raise AttributionInputError("attribution.method='layer_ig' needs a layer and a reference")
        counter = Counter()
        f, steps = problem.function(counter), self.cfg.layer_ig_steps
        lig = LayerIntegratedGradients(f, problem.layer)
        layer = lig.attribute(problem.embeds.detach(), baselines=problem.reference, n_steps=steps,
                              internal_batch_size=steps)  # fmt: skip
        coords = (layer[0] if isinstance(layer, tuple) else layer)[0]  # (L, d)
        with torch.no_grad():
            ends = f(torch.cat([problem.embeds, problem.reference.to(problem.embeds.dtype)]))
        residual = abs(float(coords.double().sum()) - float(ends[0] - ends[1]))
        signed = _numpy(coords.sum(-1))
        return TokenScores(signed, np.abs(signed), counter.forwards, counter.grad_evals, residual=residual,
                           coords=coords.detach().float())  # fmt: skip
