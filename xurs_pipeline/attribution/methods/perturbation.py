"""The methods that replace embedding rows and read the change of F_c: per token, per span, Shapley.

Each replaces rows by ``attribution.replacement`` (zero: Eq. 8's ``R_i X``; the prompt's mean row; or the
one reference's row) and evaluates the variants batched, from the unmasked prompt's key/value cache where
the model has one (``attribution/masked.py``: positions before the first replaced row are unchanged).

- ``occlusion_token``: ``F(X) - F(X with row i replaced)`` per token; L + 1 forwards (the problem's read
  positions + 1 where it names them, the other tokens NaN).
- ``occlusion_span``: the same with each span's rows replaced together, every token of a span scored with
  its span's value; spans + 1 forwards.
- ``shapley_span``: exact Shapley values of the spans, ``phi_i = sum_{S without i} |S|! (n - |S| - 1)! / n!
  (v(S + i) - v(S))`` with ``v(S) = F`` of the prompt whose spans outside S are replaced; 2^n forwards
  (every coalition once; efficiency: ``sum_i phi_i = F(X) - F(all replaced)``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from xurs_pipeline.attribution.config import SHAPLEY_MAX_SPANS, AttributionConfig
from xurs_pipeline.attribution.inputs import AttributionInputError
from xurs_pipeline.attribution.masked import masked_masses
from xurs_pipeline.attribution.methods.base import Problem, TokenScores
from xurs_pipeline.attribution.methods.token_question import TokenMethod


@dataclass(frozen=True)
class Occlusion:
    """The occlusion methods' settings: ``attribution.replacement``, what a replaced row becomes."""

    replacement: str = "zero"

    @classmethod
    def of(cls, cfg: AttributionConfig) -> Occlusion:
        return cls(cfg.replacement)


@dataclass(frozen=True)
class Shapley:
    """``shapley_span``'s settings: ``attribution.replacement`` and ``attribution.span_tokens`` (named when
    a prompt has too many spans)."""

    replacement: str = "zero"
    span_tokens: int = 4

    @classmethod
    def of(cls, cfg: AttributionConfig) -> Shapley:
        return cls(cfg.replacement, cfg.span_tokens)


@dataclass(frozen=True)
class _Prompt:
    """``masked.MaskedPrompt``: embeds (L, d), attention_mask (L,), position_ids (L,)."""

    embeds: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor


def replacement_rows(problem: Problem, replacement: str) -> torch.Tensor | None:
    """What replaced rows become, (L, d): None for zero (``masked_masses``' default), the prompt's mean row,
    or the reference's rows."""
    x = problem.embeds[0]
    if replacement == "zero":
        return None
    if replacement == "mean":
        return x.mean(0, keepdim=True).expand_as(x)
    if problem.reference is None:
        raise AttributionInputError("attribution.replacement='reference' needs the problem's reference")
    return problem.reference[0].to(x.dtype)


def occluded_values(problem: Problem, position_sets: Sequence[Sequence[int]], replacement: str) -> np.ndarray:
    """F_c of the prompt with each set's rows replaced, (n_sets,) float64 (the empty set gives F(X))."""
    mask, positions = problem.inputs(1)
    prompt = _Prompt(problem.embeds[0], mask[0], positions[0])
    masses = masked_masses(
        problem.masses,
        prompt,
        position_sets,
        problem.batch_size,
        problem.reuse_prefix,
        replacement_rows(problem, replacement),
    )
    return problem.values(masses).cpu().numpy()


def _spans(problem: Problem) -> tuple[tuple[int, ...], ...]:
    if not problem.spans:
        raise AttributionInputError("a span method needs the problem's spans (attribution.span_tokens)")
    return problem.spans


def _per_token(problem: Problem, spans: Sequence[Sequence[int]], values: np.ndarray) -> np.ndarray:
    """Each token scored with its span's value, (L,)."""
    out = np.zeros(problem.length, dtype=np.float64)
    for span, value in zip(spans, values, strict=True):
        out[list(span)] = value
    return out


def _span_scores(problem: Problem, values: np.ndarray, forwards: int) -> TokenScores:
    spans = _spans(problem)
    signed = _per_token(problem, spans, values)
    return TokenScores(
        signed,
        np.abs(signed),
        forwards,
        0,
        span_values=tuple(map(float, values)),
        coords=torch.from_numpy(signed)[:, None].float(),
    )


class OcclusionToken(TokenMethod):
    name = "occlusion_token"
    Settings = Occlusion

    def attribute_batch(self, problem: Problem) -> TokenScores:
        sets = [[], *([i] for i in problem.read_positions)]
        values = occluded_values(problem, sets, self.settings.replacement)
        signed = problem.on_read(values[0] - values[1:])
        return TokenScores(
            signed, np.abs(signed), len(sets), 0, coords=torch.from_numpy(signed)[:, None].float()
        )


class OcclusionSpan(TokenMethod):
    name = "occlusion_span"
    Settings = Occlusion

    def attribute_batch(self, problem: Problem) -> TokenScores:
        spans = _spans(problem)
        values = occluded_values(problem, [[], *spans], self.settings.replacement)
        return _span_scores(problem, values[0] - values[1:], len(spans) + 1)


def shapley_values(value: dict[frozenset[int], float], n: int) -> np.ndarray:
    """Exact Shapley values (n,) of the game ``value`` (every coalition of players 0..n-1 -> its value)."""
    phi = np.zeros(n, dtype=np.float64)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            for coalition in itertools.combinations(others, size):
                s = frozenset(coalition)
                phi[i] += weight * (value[s | {i}] - value[s])
    return phi


class SpanShapley(TokenMethod):
    name = "shapley_span"
    Settings = Shapley

    def attribute_batch(self, problem: Problem) -> TokenScores:
        spans = _spans(problem)
        n = len(spans)
        if n > SHAPLEY_MAX_SPANS:
            raise AttributionInputError(
                f"attribution.span_tokens={self.settings.span_tokens}: {n} spans of a {problem.length}-token "
                f"prompt; shapley_span enumerates 2^spans coalitions, at most {SHAPLEY_MAX_SPANS}: raise it"
            )
        coalitions = [frozenset(c) for size in range(n + 1) for c in itertools.combinations(range(n), size)]
        absent = [[p for j in range(n) if j not in c for p in spans[j]] for c in coalitions]
        values = occluded_values(problem, absent, self.settings.replacement)
        phi = shapley_values(dict(zip(coalitions, values.tolist(), strict=True)), n)
        return _span_scores(problem, phi, len(coalitions))
