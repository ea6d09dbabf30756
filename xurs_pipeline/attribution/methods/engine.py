"""The engine's estimators (``attribution/estimators.py``) on any function: a :class:`~.base.Problem` as the
engine's one-collection ``PathProblem``, so the paper's methods answer the same call as every other.

The engine reads a model with ``embed`` (token ids -> rows) and a forward giving masses, and references as
token ids (``references.PreparedReferences``). :class:`FunctionModel` gives it both: the ids index a table
of embedding rows, the input's L rows first, then each reference's rows; a reference row equal to the
input's takes the input's id, so the prefix every reference shares with X (``prefix.py``, run once where
the function can continue from a cached prefix, ``masked.PrefixMassFn``) and the blocks where a reference
already equals X (``paths.py``) are found as with token ids. Forwards: F(X) once, F(B_j) once per
reference, and a block path's piece ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from xurs_pipeline.attribution.endpoints import input_width, prepared_widths
from xurs_pipeline.attribution.estimators import Estimator, PathProblem
from xurs_pipeline.attribution.masked import MassFn
from xurs_pipeline.attribution.methods.base import Problem, TokenScores
from xurs_pipeline.attribution.model import Objective, Prompt
from xurs_pipeline.attribution.question import NonFiniteError, block_path
from xurs_pipeline.attribution.read_order import ReadGroups
from xurs_pipeline.attribution.reduction import reduce_tokens
from xurs_pipeline.attribution.references import PreparedReferences


@dataclass(frozen=True)
class Masses:
    """A forward's output as the engine reads it: masses (b, 15)."""

    masses: torch.Tensor


class FunctionModel(nn.Module):
    """``masses`` as the engine's ``WidthModel`` (and ``PrefixReuse``) over a table of rows (n_rows, d)."""

    def __init__(self, masses: MassFn, table: torch.Tensor) -> None:
        super().__init__()
        self.masses = masses
        inner = getattr(masses, "model", None)
        self.inner = inner if isinstance(inner, nn.Module) else None  # frozen with it (``model.frozen``)
        self.table = table
        module = masses if isinstance(masses, nn.Module) else self.inner
        self.training = bool(module.training) if module is not None else False  # restored as it was

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (b, L) -> rows (b, L, d)."""
        return self.table[ids]

    def forward(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> Masses:
        return Masses(self.masses(inputs_embeds, attention_mask, position_ids))

    def prefix_cache(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> Any:
        cache = getattr(self.masses, "prompt_cache", None)
        return None if cache is None else cache(inputs_embeds, attention_mask, position_ids)

    def forward_after_prefix(self, cache: Any, *rows: torch.Tensor) -> Masses:
        """``model.PrefixReuse``'s: rows = inputs_embeds (b, L - p, d), attention_mask (b, L), position_ids
        (b, L - p), continued from the cache of the first p positions."""
        embeds, mask, positions = rows
        prefix = mask.shape[1] - embeds.shape[1]
        return Masses(self.masses.after_prefix(cache, prefix, embeds, mask, positions))  # type: ignore[attr-defined]


def collection(problem: Problem) -> tuple[FunctionModel, Prompt, PreparedReferences]:
    """The problem's function, prompt and references (the zero embeddings where it has none) as the
    engine reads them (module docstring)."""
    x = problem.embeds
    refs = torch.zeros_like(x) if problem.references is None else problem.references.to(x.dtype)
    n, length, hidden = refs.shape
    same = (refs == x).all(-1)  # (n, L)
    own = torch.arange(length, device=x.device)
    ids = torch.where(same, own, own + length * torch.arange(1, n + 1, device=x.device)[:, None])
    model = FunctionModel(problem.masses, torch.cat([x[0], refs.reshape(-1, hidden)]))
    mask, positions = problem.inputs(1)
    changed = [tuple((~row).nonzero().flatten().tolist()) for row in same]
    prepared = PreparedReferences(tuple(f"reference {j}" for j in range(n)), None, ids, changed)
    return model, Prompt(x, mask, positions), prepared


def read_groups(problem: Problem, reduction: str) -> ReadGroups | None:
    """The spans a caller reads, as kronrod's ``read`` rule orders them: the problem's spans that lie within
    its read positions (the swap study's two cues), or None when fewer than two do."""
    if problem.spans is None or problem.read is None:
        return None
    read = set(problem.read)
    groups = tuple(span for span in problem.spans if span and set(span) <= read)
    return ReadGroups(groups, reduction) if len(groups) >= 2 else None


def path_scores(problem: Problem, estimator: Estimator, settings: Any) -> TokenScores:
    """``estimator`` on ``problem``'s references as one collection: the target's coordinates (L, d), their
    sum over hidden (signed) and ``settings.reduction`` (magnitude), the completeness residual (Eq. 9)
    and the estimator's error bound; ``settings``: ``samples_per_call``, ``path``, ``path_block``."""
    model, prompt, refs = collection(problem)
    objective = Objective.build((problem.target,), "direct", problem.target_fn)
    w_x = input_width(model, prompt, problem.target_fn)[0]
    widths = prepared_widths(model, prompt, refs, problem.batch_size, problem.target_fn)
    spc, reuse = settings.samples_per_call, problem.reuse_prefix
    read = read_groups(problem, settings.reduction)
    path = PathProblem(model, objective, prompt, refs, widths, w_x, spc, reuse, read=read)
    forwards = 1 + len(refs)
    if settings.path == "blocks":
        ids = tuple(range(problem.length))
        path, ends = block_path(path, ids, settings.path_block, problem.batch_size, problem.target_fn)
        forwards += ends
    result = estimator.attribute(path)
    e = result.e[0]  # (L, d) float32
    if result.nonfinite_refs or not bool(torch.isfinite(e).all()):
        raise NonFiniteError(
            f"{estimator.method}: non-finite gradients from references {result.nonfinite_refs}"
        )
    difference = float(w_x[problem.target]) - float(result.reference_mean[0])
    return TokenScores(
        e.sum(-1).double().cpu().numpy(),
        reduce_tokens(e, settings.reduction).double().cpu().numpy(),
        forwards + result.forwards,
        result.grad_evals,
        residual=abs(float(e.sum()) - difference),  # Eq. 9
        error_bound=float(np.asarray(result.error_bound)[0]),
        coords=e.detach(),
    )
