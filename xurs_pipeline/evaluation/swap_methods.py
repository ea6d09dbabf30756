"""Attribution methods compared on the swap probes, each read as how much it credits each of the two cues.

Every method explains the same function, the label's width ``W_c`` (Eq. 2) as a function of the probe's
input embeddings ``x`` (1, seq, hidden), on the same model and probe. Captum's implementations are used
where they fit; the paper's estimator is read from the ``attribute`` stages' runs, and the two nulls are
computed apart (the ``swap`` task). Each method, with its cost in model evaluations per probe:

- ``paper``: the ``attribute`` stages' estimator, ``attribution.method`` (kronrod, EG or IG against the
  training references, certified to App. B.4); its run's gradient evaluations;
- ``grad_l2``: ``||dW/dx_l||_2`` per token (captum ``Saliency``); 1 gradient;
- ``grad_x_input``: ``|sum_h x_lh dW/dx_lh|`` (captum ``InputXGradient``); 1 gradient;
- ``occlusion_token``: ``|W(x) - W(x with row l zeroed)|`` per token, Eq. 8's zero-masking one token at a
  time (captum ``FeatureAblation``); seq + 1 forwards;
- ``layer_ig``: IG of the width w.r.t. the output of the block halfway up, from the first prepared training
  reference, summed over hidden (captum ``LayerIntegratedGradients``); ``evaluation.swap_layer_ig_steps``
  gradients and 2 forwards;
- ``occlusion_span``: the width change with each cue's tokens zeroed together; 4 forwards (captum
  ``FeatureAblation`` with a feature mask);
- ``shapley_span``: exact Shapley values of three players, cue 1, cue 2 and the rest, an absent player's
  tokens zeroed (captum ``ShapleyValues``); about 20 forwards (its 3! orders share coalitions);
- ``input_only``: embedding distance to the references, no model (``nulls.input_only_scores``), a null;
- ``random``: uniform random token scores, seeded, a null.

A method's reading of one probe is :class:`CueReading`: per cue the best token's magnitude (which cue it
ranks first, as ``swap.cue_score`` does) and the cue's total magnitude (its share); span methods credit a
cue as a whole, so both are the span's magnitude.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from captum.attr import (
    FeatureAblation,
    InputXGradient,
    LayerIntegratedGradients,
    Saliency,
    ShapleyValues,
)
from torch import nn

from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.targets import width_target
from xurs_pipeline.evaluation.config import SWAP_METHODS
from xurs_pipeline.evaluation.randomisation import block_list_name

TOKEN_METHODS = ("grad_l2", "grad_x_input", "occlusion_token", "layer_ig")
GRADIENT_METHODS = ("grad_l2", "grad_x_input", "layer_ig")
SPAN_METHODS = ("occlusion_span", "shapley_span")
RUN_METHODS = ("paper",)  # read from the attribute stages' runs
NULL_METHODS = ("input_only", "random")
METHODS = SWAP_METHODS  # evaluation.swap_methods' choices; the groups above partition them

WidthFn = Callable[[torch.Tensor], torch.Tensor]  # embeds (b, seq, d) -> the label's width (b,)


@dataclass(frozen=True)
class CueReading:
    """How a method credits the two cues on one probe: ``best`` (2,) the largest token magnitude in each cue,
    ``total`` (2,) each cue's summed magnitude, ``evals`` the model evaluations it took (input rows)."""

    best: tuple[float, float]
    total: tuple[float, float]
    evals: int = 0

    @property
    def top(self) -> int:
        """The cue ranked first (1 or 2), 0 on a tie (a method that moves neither cue ranks none)."""
        return 1 if self.best[0] > self.best[1] else 2 if self.best[1] > self.best[0] else 0

    @property
    def share_1(self) -> float:
        """Cue 1's share of the two cues' magnitude (NaN when both are 0)."""
        both = self.total[0] + self.total[1]
        return self.total[0] / both if both > 0 else float("nan")


def token_reading(magnitude: Sequence[float], cues: Sequence[Sequence[int]], evals: int = 0) -> CueReading:
    """A token method's reading: magnitude (seq,) and the two cues' positions."""
    a = np.abs(np.asarray(magnitude, dtype=np.float64))
    best = tuple(float(a[list(c)].max()) for c in cues)
    total = tuple(float(a[list(c)].sum()) for c in cues)
    return CueReading(best, total, evals)  # type: ignore[arg-type]


def width_function(classifier: nn.Module, c: int) -> WidthFn:
    """``x -> W_c(x)`` of an unpadded prompt: embeds (b, seq, d) -> (b,), all positions attended."""
    masses = classifier_mass_fn(classifier)

    def width(embeds: torch.Tensor) -> torch.Tensor:
        b, seq = embeds.shape[:2]
        mask = torch.ones(b, seq, dtype=torch.long, device=embeds.device)
        positions = torch.arange(seq, device=embeds.device).expand(b, seq)
        return width_target(masses(embeds, mask, positions), torch.full((b,), c, device=embeds.device))

    return width


class Counted:
    """A width function that counts the input rows it evaluates (the cost column of the comparison)."""

    def __init__(self, fn: WidthFn) -> None:
        self.fn, self.rows = fn, 0

    def __call__(self, embeds: torch.Tensor) -> torch.Tensor:
        self.rows += int(embeds.shape[0])
        return self.fn(embeds)


@dataclass(frozen=True)
class Probe:
    """One probe under one model: embeds (1, seq, d), the two cues' positions, the first prepared training
    reference's embeddings (1, seq, d) for ``layer_ig``."""

    embeds: torch.Tensor
    cues: tuple[list[int], list[int]]
    reference: torch.Tensor


def span_mask(seq: int, cues: Sequence[Sequence[int]], device: torch.device) -> torch.Tensor:
    """Feature ids (1, seq, 1): cue 1's positions 0, cue 2's 1, every other position 2."""
    mask = torch.full((1, seq, 1), 2, dtype=torch.long, device=device)
    for k, cue in enumerate(cues):
        mask[0, list(cue), 0] = k
    return mask


def explain(method: str, width: WidthFn, probe: Probe, block: nn.Module, steps: int) -> CueReading:
    """``method`` (a token or span method) on one probe; ``block`` is ``layer_ig``'s layer."""
    f, x = Counted(width), probe.embeds.detach().requires_grad_(method in GRADIENT_METHODS)
    seq = x.shape[1]
    if method == "grad_l2":
        token = Saliency(f).attribute(x, abs=False).norm(dim=-1)[0]
    elif method == "grad_x_input":
        token = InputXGradient(f).attribute(x).sum(-1)[0]
    elif method == "occlusion_token":
        ids = torch.arange(seq, device=x.device).reshape(1, seq, 1).expand_as(x).contiguous()
        token = FeatureAblation(f).attribute(x, baselines=0.0, feature_mask=ids,
                                             perturbations_per_eval=min(seq, 32))[0, :, 0]  # fmt: skip
    elif method == "layer_ig":
        lig = LayerIntegratedGradients(f, block)
        layer = lig.attribute(x, baselines=probe.reference, n_steps=steps, internal_batch_size=steps)
        token = (layer[0] if isinstance(layer, tuple) else layer).sum(-1)[0]
    elif method in SPAN_METHODS:
        algorithm = FeatureAblation(f) if method == "occlusion_span" else ShapleyValues(f)
        mask = span_mask(seq, probe.cues, x.device).expand_as(x).contiguous()
        values = algorithm.attribute(x, baselines=0.0, feature_mask=mask, perturbations_per_eval=8)
        span = [abs(float(values[0, cue[0], 0])) for cue in probe.cues]
        return CueReading((span[0], span[1]), (span[0], span[1]), f.rows)
    else:
        raise ValueError(f"unknown swap method {method!r}; valid: {list(TOKEN_METHODS + SPAN_METHODS)}")
    return token_reading(token.detach().double().cpu().numpy(), probe.cues, f.rows)


def middle_block(classifier: nn.Module) -> nn.Module:
    """The block halfway up the classifier's backbone, ``(n - 1) // 2`` of ``n`` (``layer_ig``'s layer): never
    the last one when there are two or more, whose output reaches the head only at the pooled position."""
    blocks = classifier.get_submodule(block_list_name(classifier))
    return blocks[(len(blocks) - 1) // 2]


def random_reading(cues: Sequence[Sequence[int]], seq: int, seed: int) -> CueReading:
    """The ``random`` null: uniform token scores from ``numpy.random.default_rng(seed)``."""
    return token_reading(np.random.default_rng(seed).random(seq), cues)
