"""What every attribution method shares: the question it explains, the function it explains, its record.

Captum's design: one class per method, each with the same call, working on any forward function.

- Every method: ``explain(QuestionInputs) -> QuestionResult``, one question end to end (the ``attribute``
  stage, ``xurs explain``, the checks' re-attribution): one row of the ``attributions`` schema per explained
  answer, with its token scores, its cost in forwards and gradient evaluations and, where the method has
  one, its completeness residual (Eq. 9) and error bound.
- A token method also has Captum's ``attribute``: ``scores(TokenProblem) -> TokenScores`` on any masses
  function of the embeddings (``attribution.masked.MassFn``); the swap study calls it on its probes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.masked import MassFn
from xurs_pipeline.attribution.model import WidthModel
from xurs_pipeline.attribution.question import Question, QuestionResult, ReferencePool
from xurs_pipeline.attribution.targets import option_values

WidthFn = Callable[[torch.Tensor], torch.Tensor]  # embeds (b, L, d) -> F_c (b,)


@dataclass(frozen=True)
class QuestionInputs:
    """What one question's explanation needs: the model (``attribution.model.WidthModel``), the question
    (``question.Question``), the training references (``question.ReferencePool``, or None), the config,
    the pad id, a progress callback and the explained options (None: ``attribution.target``'s rule)."""

    model: WidthModel
    question: Question
    pool: ReferencePool | None
    cfg: AttributionConfig
    pad_id: int
    on_batch: Callable[[int], None] | None = None
    targets: tuple[int, ...] | None = None


@dataclass(frozen=True)
class TokenProblem:
    """One explained function of one prompt: ``F_c(x)``, the answer ``target``'s value of ``target_fn``
    (``attribution.targets``, the width W_c by default, Eq. 2) under ``masses``.

    embeds (1, L, d): the prompt's embeddings X; attention_mask, position_ids (1, L) (None: all attended,
    positions 0..L-1); reference (1, L, d): the one reference of the methods that read one (``layer_ig``,
    ``replacement='reference'``); spans: the span methods' players, each a tuple of positions (disjoint,
    covering the prompt); layer: ``layer_ig``'s block; batch_size: variants per forward pass;
    reuse_prefix: occlusion runs the unmasked prefix once (``attribution/masked.py``).
    """

    masses: MassFn
    embeds: torch.Tensor
    target: int
    target_fn: str = "width"
    attention_mask: torch.Tensor | None = None
    position_ids: torch.Tensor | None = None
    reference: torch.Tensor | None = None
    spans: tuple[tuple[int, ...], ...] | None = None
    layer: nn.Module | None = None
    batch_size: int = 16
    reuse_prefix: bool = True

    @property
    def length(self) -> int:
        return int(self.embeds.shape[1])

    def inputs(self, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The mask and positions of ``rows`` copies of the prompt, (rows, L) each."""
        seq, device = self.length, self.embeds.device
        mask = self.attention_mask if self.attention_mask is not None else torch.ones(1, seq, device=device)
        positions = self.position_ids if self.position_ids is not None else torch.arange(seq, device=device)
        return mask.reshape(1, seq).expand(rows, seq).long(), positions.reshape(1, seq).expand(rows, seq)

    def values(self, masses: torch.Tensor) -> torch.Tensor:
        """masses (b, 15) -> F_c (b,)."""
        return option_values(self.target_fn, masses, validate=False)[:, self.target]

    def function(self, counter: Counter) -> WidthFn:
        """``x -> F_c(x)``, embeds (b, L, d) -> (b,), counting its rows in ``counter``."""

        def f(embeds: torch.Tensor) -> torch.Tensor:
            counter.add(int(embeds.shape[0]))
            mask, positions = self.inputs(int(embeds.shape[0]))
            return self.values(self.masses(embeds, mask, positions))

        return f


@dataclass
class Counter:
    """The rows a method evaluates: with autograd recording (gradient evaluations) or without (forwards)."""

    forwards: int = 0
    grad_evals: int = 0

    def add(self, rows: int) -> None:
        if torch.is_grad_enabled():
            self.grad_evals += rows
        else:
            self.forwards += rows


@dataclass(frozen=True)
class TokenScores:
    """One method's attribution of one function: signed (L,) and magnitude (L,) per token (float64), the
    rows it evaluated (``forwards``, ``grad_evals``), its completeness residual |sum signed - (F(X) - F(B))|
    (Eq. 9) and error bound where it has them (NaN otherwise), the span methods' value per span, and the
    coordinate attribution kept with the row (L, d) or (L, 1)."""

    signed: np.ndarray
    magnitude: np.ndarray
    forwards: int
    grad_evals: int
    residual: float = float("nan")
    error_bound: float = float("nan")
    span_values: tuple[float, ...] | None = None
    coords: torch.Tensor | None = field(default=None, repr=False)


class AttributionMethod(ABC):
    """One attribution method: ``name`` (``attribution.method``) and one question's explanation."""

    name: ClassVar[str]

    def __init__(self, cfg: AttributionConfig) -> None:
        self.cfg = cfg

    @abstractmethod
    def explain(self, inputs: QuestionInputs) -> QuestionResult:
        """One question -> one ``attributions`` row per explained answer (or the non-finite failure)."""


class TokenMethod(AttributionMethod):
    """A method that explains any masses function of the embeddings (Captum's ``attribute``)."""

    @abstractmethod
    def scores(self, problem: TokenProblem) -> TokenScores:
        """The method on one problem."""

    def explain(self, inputs: QuestionInputs) -> QuestionResult:
        from xurs_pipeline.attribution.methods.token_question import explain_tokens

        return explain_tokens(self, inputs)
