"""The methods that read gradients of F_c at the prompt or along one path (captum's implementations).

- ``grad_l2``: ``||dF/dx_i||_2`` per token (captum ``Saliency``); signed = magnitude; 1 gradient.
- ``grad_x_input``: ``sum_h x_ih dF/dx_ih`` per token (captum ``InputXGradient``); 1 gradient.
- ``layer_ig``: IG of F_c with respect to the output of the block halfway up, from the one reference
  (captum ``LayerIntegratedGradients``, ``attribution.layer_ig_steps`` Gauss-Legendre points), summed over
  hidden per position; completeness: its total against ``F(X) - F(B)`` (Eq. 9 on the layer), from 2 more
  forwards.
- ``sequential_ig``: Sequential IG (Enguehard 2023), IG of F_c along row i alone from its baseline row b_i
  (``attribution.replacement``: zero, the prompt's mean row or the reference's row) to x_i, every other
  row kept at the input, ``attribution.sequential_ig_steps`` Gauss-Legendre points per token:
  ``e_ih = (x_ih - b_ih) sum_k w_k dF/dx_ih(X with row i = b_i + a_k (x_i - b_i))``; completeness per
  token: ``sum_h e_ih = F(X) - F(X with row i = b_i)`` (Eq. 9 per token segment), its residual the largest
  gap, from L + 1 more forwards. L x steps gradients (the problem's read positions in place of L where it
  names them, the other tokens NaN).

Every method's signed score is its coordinates summed over hidden (``grad_l2``: the norm); its magnitude
the coordinates reduced by ``attribution.reduction`` (``attribution/reduction.py``; ``own``: L2 for
``grad_l2``, |sum| for the others).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from captum.attr import InputXGradient, LayerIntegratedGradients, Saliency
from torch import nn

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import AttributionInputError
from xurs_pipeline.attribution.methods.base import Counter, Problem, TokenScores, WidthFn
from xurs_pipeline.attribution.methods.perturbation import occluded_values, replacement_rows
from xurs_pipeline.attribution.methods.token_question import TokenMethod, middle_block
from xurs_pipeline.attribution.reduction import reduce_tokens


def _numpy(values: torch.Tensor) -> np.ndarray:
    return values.detach().double().cpu().numpy()


@dataclass(frozen=True)
class Reduction:
    """``grad_l2``'s and ``grad_x_input``'s settings: the reduction over hidden (``attribution.reduction``
    resolved, ``l2`` or ``abs_sum``)."""

    reduction: str

    @classmethod
    def of(cls, cfg: AttributionConfig) -> Reduction:
        return cls(cfg.token_reduction)


@dataclass(frozen=True)
class LayerSteps:
    """``layer_ig``'s settings: ``attribution.layer_ig_steps`` Gauss-Legendre points and the reduction."""

    steps: int
    reduction: str

    @classmethod
    def of(cls, cfg: AttributionConfig) -> LayerSteps:
        return cls(cfg.layer_ig_steps, cfg.token_reduction)


@dataclass(frozen=True)
class SequentialSteps:
    """``sequential_ig``'s settings: ``attribution.sequential_ig_steps`` points per token, the baseline rows
    (``attribution.replacement``) and the reduction."""

    steps: int
    replacement: str
    reduction: str

    @classmethod
    def of(cls, cfg: AttributionConfig) -> SequentialSteps:
        return cls(cfg.sequential_ig_steps, cfg.replacement, cfg.token_reduction)


class GradientMethod(TokenMethod):
    """A method whose coordinates (L, d) are reduced over hidden by ``attribution.reduction``."""

    def magnitude(self, coords: torch.Tensor, signed: np.ndarray | None = None) -> np.ndarray:
        """coords (L, d) -> magnitudes (L,) float64."""
        return _numpy(reduce_tokens(coords.detach(), self.settings.reduction))


class GradientL2(GradientMethod):
    name = "grad_l2"
    Settings = Reduction

    def attribute_batch(self, problem: Problem) -> TokenScores:
        counter = Counter()
        x = problem.embeds.detach().requires_grad_(True)
        grad = Saliency(problem.function(counter)).attribute(x, abs=False)[0]  # (L, d)
        norm = _numpy(grad.norm(dim=-1))
        return TokenScores(
            norm, self.magnitude(grad), counter.forwards, counter.grad_evals, coords=grad.detach().float()
        )


class GradientXInput(GradientMethod):
    name = "grad_x_input"
    Settings = Reduction

    def attribute_batch(self, problem: Problem) -> TokenScores:
        counter = Counter()
        x = problem.embeds.detach().requires_grad_(True)
        coords = InputXGradient(problem.function(counter)).attribute(x)[0]  # (L, d)
        return TokenScores(
            _numpy(coords.sum(-1)),
            self.magnitude(coords),
            counter.forwards,
            counter.grad_evals,
            coords=coords.detach().float(),
        )


class LayerIG(GradientMethod):
    name = "layer_ig"
    Settings = LayerSteps

    def layer(self, model: nn.Module) -> nn.Module:
        return middle_block(model)

    def attribute_batch(self, problem: Problem) -> TokenScores:
        if problem.layer is None or problem.reference is None:
            raise AttributionInputError("attribution.method='layer_ig' needs a layer and a reference")
        counter = Counter()
        f, steps = problem.function(counter), self.settings.steps
        lig = LayerIntegratedGradients(f, problem.layer)
        layer = lig.attribute(
            problem.embeds.detach(), baselines=problem.reference, n_steps=steps, internal_batch_size=steps
        )
        coords = (layer[0] if isinstance(layer, tuple) else layer)[0]  # (L, d)
        with torch.no_grad():
            ends = f(torch.cat([problem.embeds, problem.reference.to(problem.embeds.dtype)]))
        residual = abs(float(coords.double().sum()) - float(ends[0] - ends[1]))
        return TokenScores(
            _numpy(coords.sum(-1)),
            self.magnitude(coords),
            counter.forwards,
            counter.grad_evals,
            residual=residual,
            coords=coords.detach().float(),
        )


class SequentialIG(GradientMethod):
    name = "sequential_ig"
    Settings = SequentialSteps

    def attribute_batch(self, problem: Problem) -> TokenScores:
        counter, read = Counter(), list(problem.read_positions)
        x = problem.embeds.detach()
        baseline = replacement_rows(problem, self.settings.replacement)
        b = torch.zeros_like(x[0]) if baseline is None else baseline.detach()  # (L, d)
        coords = self._row_paths(problem, problem.function(counter), b[read], read)  # (n_read, d)
        with torch.no_grad():
            values = occluded_values(problem, [[], *([i] for i in read)], self.settings.replacement)
        residual = float(np.abs(_numpy(coords.sum(-1)) - (values[0] - values[1:])).max())
        placed = torch.full_like(x[0], float("nan"))
        placed[read] = coords
        return TokenScores(
            problem.on_read(_numpy(coords.sum(-1))),
            self.magnitude(placed),
            len(read) + 1,
            counter.grad_evals,
            residual=residual,
            coords=placed.detach().float(),
        )

    def _row_paths(self, problem: Problem, f: WidthFn, b: torch.Tensor, read: list[int]) -> torch.Tensor:
        """IG of each read row alone from its baseline row ``b`` (n_read, d) to the input, the others kept
        at the input: (n_read, d) coordinates, ``steps`` Gauss-Legendre gradients per row, batched."""
        x, steps = problem.embeds.detach(), self.settings.steps
        nodes, weights = np.polynomial.legendre.leggauss(steps)  # captum's gausslegendre on [0, 1]
        alphas = torch.as_tensor((nodes + 1) / 2, dtype=x.dtype, device=x.device)
        w = torch.as_tensor(weights / 2, dtype=x.dtype, device=x.device)
        rows = b[:, None, :] + alphas[None, :, None] * (x[0, read] - b)[:, None, :]  # (n_read, steps, d)
        grads = torch.empty_like(rows)
        flat = [(r, k) for r in range(len(read)) for k in range(steps)]
        for start in range(0, len(flat), problem.batch_size):
            chunk = flat[start : start + problem.batch_size]
            variants = x.expand(len(chunk), -1, -1).clone()
            slot, point = (torch.tensor(v, device=x.device) for v in zip(*chunk, strict=True))
            token = torch.as_tensor(read, device=x.device)[slot]
            variants[torch.arange(len(chunk)), token] = rows[slot, point]
            with torch.enable_grad():
                variants.requires_grad_(True)
                (grad,) = torch.autograd.grad(f(variants).sum(), variants)
            grads[slot, point] = grad[torch.arange(len(chunk)), token]
        return (x[0, read] - b) * (w[None, :, None] * grads).sum(1)
