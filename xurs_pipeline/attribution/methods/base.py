"""What every attribution method shares: the one call, the problem it is made on, the record it returns.

Captum's design: one class per method, its settings in the constructor, and one call on one problem.

- The call: ``method.attribute(Problem) -> TokenScores``. A :class:`Problem` is the explained function (any
  masses function of the embeddings, ``attribution.masked.MassFn``, and the answer's target function), the
  input X and a batch of references (n, L, d); every method, the paper's estimators included, answers it
  the same way. The mean over the references (App. B.2: references averaged before magnitudes) is taken
  here, once (:meth:`AttributionMethod.attribute`): a method reads ``references_per_call`` of them per
  call, one for the token methods, the whole batch for the paper's estimators, whose estimator integrates a
  collection together (Eq. 3 draws its references; kronrod and certified spend one budget on them).
- The settings: each method owns a small frozen dataclass (``Settings``) of the ``attribution.*`` keys it
  reads (or of a ``name@key=value`` entry, ``attribution/variants.py``, through its config),
  ``Settings.of(cfg)``; ``method_for(cfg)`` builds it.
- One question of the pipeline: ``explain(QuestionInputs) -> QuestionResult`` (the ``attribute`` stage, ``xurs
  explain``, the checks' re-attribution): one row of the ``attributions`` schema per explained answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.masked import MassFn
from xurs_pipeline.attribution.question import QuestionInputs, QuestionResult
from xurs_pipeline.attribution.targets import option_values

WidthFn = Callable[[torch.Tensor], torch.Tensor]  # embeds (b, L, d) -> F_c (b,)


@dataclass(frozen=True)
class Problem:
    """One explained function of one prompt: ``F_c(x)``, the answer ``target``'s value of ``target_fn``
    (``attribution.targets``, the width W_c by default, Eq. 2) under ``masses``.

    embeds (1, L, d): the prompt's embeddings X; attention_mask, position_ids (1, L) (None: all attended,
    positions 0..L-1); references (n, L, d): the batch of references B_j (None: a method that reads none);
    spans: the span methods' players, each a tuple of positions (disjoint, covering the prompt); layer:
    ``layer_ig``'s block; batch_size: variants per forward pass; reuse_prefix: the unchanged prefix runs
    once (``attribution/masked.py``, ``attribution/prefix.py``); read: the positions whose scores the caller
    reads (None: every position): a method that pays per token (``occlusion_token``, ``sequential_ig``)
    scores only these and leaves the others NaN, a method that scores every token at once ignores it.
    """

    masses: MassFn
    embeds: torch.Tensor
    target: int
    target_fn: str = "width"
    attention_mask: torch.Tensor | None = None
    position_ids: torch.Tensor | None = None
    references: torch.Tensor | None = None
    spans: tuple[tuple[int, ...], ...] | None = None
    layer: nn.Module | None = None
    batch_size: int = 16
    reuse_prefix: bool = True
    read: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        read = self.read
        if read is not None and (
            not read or len(set(read)) != len(read) or not set(read) <= set(range(self.length))
        ):
            raise ValueError(
                f"read positions {list(read)} must be distinct, non-empty and within the prompt's "
                f"{self.length} tokens"
            )

    @property
    def length(self) -> int:
        return int(self.embeds.shape[1])

    @property
    def read_positions(self) -> tuple[int, ...]:
        """The positions a per-token method scores: ``read``, or every position."""
        return tuple(range(self.length)) if self.read is None else self.read

    def on_read(self, values: np.ndarray) -> np.ndarray:
        """values (len(read_positions), ...) placed at the read positions of an (L, ...) float64 array,
        NaN at every position not read."""
        out = np.full((self.length, *values.shape[1:]), np.nan)
        out[list(self.read_positions)] = values
        return out

    @property
    def reference(self) -> torch.Tensor | None:
        """The first reference (1, L, d), what a method that reads one reference reads (None without)."""
        return None if self.references is None else self.references[:1]

    def split(self, size: int | None) -> list[Problem]:
        """The problem once per ``size`` consecutive references (None, or no references: itself)."""
        refs = self.references
        if refs is None or size is None:
            return [self]
        return [replace(self, references=refs[j : j + size]) for j in range(0, len(refs), size)]

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

    @property
    def coordinates(self) -> torch.Tensor:
        """The coordinate attribution (L, d), or the signed scores as (L, 1) where none was kept."""
        return self.coords if self.coords is not None else torch.from_numpy(self.signed)[:, None].float()


class AttributionMethod(ABC):
    """One attribution method: ``name`` (``attribution.method``), its ``Settings``, the one call
    (:meth:`attribute`) and one question's explanation (:meth:`explain`)."""

    name: ClassVar[str]
    Settings: ClassVar[Any]  # a frozen dataclass with ``of(cfg: AttributionConfig)``
    references_per_call: ClassVar[int | None] = 1  # None: the whole batch in one call

    def __init__(self, settings: Any) -> None:
        self.settings = settings

    @classmethod
    def configured(cls, cfg: AttributionConfig) -> AttributionMethod:
        """The method with its settings read from ``cfg``."""
        return cls(cls.Settings.of(cfg))

    def attribute(self, problem: Problem) -> TokenScores:
        """The method on ``problem``: ``references_per_call`` references a call, the calls averaged
        (:meth:`mean`, App. B.2)."""
        return self.mean([self.attribute_batch(part) for part in problem.split(self.references_per_call)])

    @abstractmethod
    def attribute_batch(self, problem: Problem) -> TokenScores:
        """The method on ``problem`` with at most ``references_per_call`` references."""

    def magnitude(self, coords: torch.Tensor, signed: np.ndarray) -> np.ndarray:
        """A token's magnitude (L,) float64 from its coordinates (L, d) and signed score (L,): |signed|
        unless the method reduces coordinates (``attribution.reduction``)."""
        magnitude: np.ndarray = np.abs(signed)
        return magnitude

    def reduced(self, scores: TokenScores) -> TokenScores:
        """``scores`` of this method's computation under another reduction, with this method's magnitudes
        (:meth:`magnitude` of the same coordinates and signed scores): a reduction twin computed once."""
        return replace(scores, magnitude=self.magnitude(scores.coordinates, scores.signed))

    def mean(self, scores: Sequence[TokenScores]) -> TokenScores:
        """The calls' scores over the references averaged (App. B.2: references averaged before
        magnitudes): signed scores, coordinates and span values averaged, the magnitude that of the average
        (:meth:`magnitude`); forwards and gradient evaluations summed. One call's scores are returned as
        they are."""
        if len(scores) == 1:
            return scores[0]
        signed = np.mean([s.signed for s in scores], axis=0)
        coords = torch.stack([s.coordinates for s in scores]).mean(0)
        values = [s.span_values for s in scores if s.span_values is not None]
        spans = tuple(np.mean(values, axis=0).tolist()) if values else None
        forwards, grad_evals = sum(s.forwards for s in scores), sum(s.grad_evals for s in scores)
        magnitude = self.magnitude(coords, signed)
        return TokenScores(signed, magnitude, forwards, grad_evals, span_values=spans, coords=coords)

    def layer(self, model: nn.Module) -> nn.Module | None:
        """The block of ``model`` the method integrates at (None: it reads the embeddings)."""
        return None

    @abstractmethod
    def explain(self, inputs: QuestionInputs) -> QuestionResult:
        """One question -> one ``attributions`` row per explained answer (or the non-finite failure)."""
