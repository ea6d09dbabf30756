"""One question end to end: explained answers, references, estimator, averaging, residuals (Eq. 9).

The explained answer c is fixed from the original prompt (argmax BetP by default, Sec. 3.1) and kept
while the inputs change. Collections are averaged in float32 before token magnitudes (App. B.2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.endpoints import input_width, natural_widths, prepared_widths, prompt_of
from xurs_pipeline.attribution.estimators import CollectionResult, Estimator, PathProblem
from xurs_pipeline.attribution.model import Objective, WidthModel, model_device
from xurs_pipeline.attribution.paths import block_pieces
from xurs_pipeline.attribution.read_order import ReadGroups
from xurs_pipeline.attribution.records import NonFiniteReport, Question, QuestionRun, TargetAttribution
from xurs_pipeline.attribution.references import (
    PreparedReferences,
    prepare_aligned,
    prepare_training,
    prepare_zero,
)
from xurs_pipeline.errors import XursError


class NonFiniteError(XursError, FloatingPointError):
    """Non-finite widths or gradients, raised when ``attribution.on_nonfinite='raise'``."""


@dataclass
class ReferencePool:
    """Training-reference collections shared by all questions, with their natural widths (M_k, 4)."""

    record_ids: list[tuple[str, ...]]
    token_ids: list[list[list[int]]]
    natural: list[torch.Tensor] = field(default_factory=list)

    def measured(self, model: WidthModel, cfg: AttributionConfig) -> ReferencePool:
        """The pool with each collection's natural widths F(B) (M_k, 4) under ``cfg.target_fn`` (Eq. 10's
        endpoint), ``cfg.eval_batch_size`` references per call on the model's device: the one place a
        pool's widths are measured."""
        device = model_device(model) if isinstance(model, torch.nn.Module) else torch.device("cpu")
        batch = cfg.eval_batch_size
        natural = [natural_widths(model, ids, batch, device, cfg.target_fn) for ids in self.token_ids]
        return ReferencePool(self.record_ids, self.token_ids, natural)


@dataclass(frozen=True)
class QuestionInputs:
    """What one question's explanation needs: the model (``attribution.model.WidthModel``), the question
    (``records.Question``), the training references (:class:`ReferencePool`, or None), the config,
    the pad id, a progress callback and the explained options (None: ``attribution.target``'s rule)."""

    model: WidthModel
    question: Question
    pool: ReferencePool | None
    cfg: AttributionConfig
    pad_id: int
    on_batch: Callable[[int], None] | None = None
    targets: tuple[int, ...] | None = None


@dataclass
class QuestionResult:
    """One row per explained target, or the failure; ``traces``: kronrod's per-step record of each collection
    (``quadrature.TRACE_COLUMNS``; empty arrays for the other estimators)."""

    rows: list[TargetAttribution]
    failure: NonFiniteReport | None = None
    traces: list[np.ndarray] = field(default_factory=list)


def explained_targets(rule: str, predicted: int, answer_idx: int) -> tuple[int, ...]:
    """Options to explain: ``predicted`` (argmax BetP), ``correct`` (the key) or ``all``."""
    if rule == "predicted":
        return (predicted,)
    if rule == "correct":
        return (answer_idx,)
    if rule == "all":
        return (0, 1, 2, 3)
    raise ValueError(f"attribution.target={rule!r}: must be 'predicted', 'correct' or 'all'")


def prepared_collections(
    model: WidthModel,
    q: Question,
    pool: ReferencePool | None,
    cfg: AttributionConfig,
    pad_id: int,
) -> list[tuple[PreparedReferences, torch.Tensor | None]]:
    device = model_device(model)  # type: ignore[arg-type]
    if cfg.reference == "zero":
        return [(prepare_zero(q.input_ids), None)]
    if cfg.reference == "aligned":
        if q.paired_ids is None or q.paired_id is None:
            raise ValueError(f"record {q.record_id}: attribution.reference='aligned' needs a paired prompt")
        refs = prepare_aligned(q.input_ids, q.paired_ids, q.paired_id, pad_id, device)
        return [(refs, natural_widths(model, [q.paired_ids], 1, device, cfg.target_fn))]
    if pool is None:
        raise ValueError("attribution.reference='train' needs a ReferencePool of training prompts")
    return [
        (prepare_training(q.input_ids, ids, rids, pad_id, device, cfg.reference_alignment), natural)
        for rids, ids, natural in zip(pool.record_ids, pool.token_ids, pool.natural, strict=True)
    ]


def nonfinite_failure(
    q: Question,
    targets: tuple[int, ...],
    where: str,
    collection: int,
    refs: list[str],
    cfg: AttributionConfig,
) -> NonFiniteReport:
    report = NonFiniteReport(q.record_id, list(targets), where, collection, refs, cfg.precision)
    if cfg.on_nonfinite == "raise":
        raise NonFiniteError(report.message())
    return report


def block_path(
    problem: PathProblem, input_ids: tuple[int, ...], block: int, batch_size: int, target_fn: str
) -> tuple[PathProblem, int]:
    """``problem`` on block paths of ``block`` positions (``paths.py``, ``attribution.path_block``) with each
    piece's width step F(end) - F(start), ``batch_size`` ends per forward; the forward passes it took.

    Only the pieces' ends are evaluated: a path's first piece starts at its prepared reference (F known) and
    every other piece where the one before it ended, so the pieces' steps telescope exactly to F(X) - F(B).
    """
    pieces = block_pieces(problem.refs, input_ids, block)
    end = prepared_widths(problem.model, problem.prompt, pieces.ends(), batch_size, target_fn)
    owner = torch.as_tensor(pieces.owner, device=end.device)
    first = torch.ones_like(owner, dtype=torch.bool)
    first[1:] = owner[1:] != owner[:-1]
    start = torch.where(first[:, None], problem.ref_widths[owner], end.roll(1, dims=0))
    return replace(problem, refs=pieces.refs, pieces=pieces, piece_widths=end - start), len(pieces.refs)


def _nonfinite_widths(
    record_ids: Sequence[str], prepared: torch.Tensor, natural: torch.Tensor | None
) -> tuple[str, list[str]] | None:
    """Which reference widths (n, 4) hold NaN or inf, prepared first, and the references that hold them."""
    checks = [("prepared reference width", prepared)]
    if natural is not None:
        checks.append(("natural reference width", natural))
    for where, widths in checks:
        rows_bad = (~torch.isfinite(widths).all(dim=1)).nonzero().flatten().tolist()
        if rows_bad:
            return where, [record_ids[i] for i in rows_bad]
    return None


def on_path(
    problem: PathProblem, input_ids: tuple[int, ...], cfg: AttributionConfig
) -> tuple[PathProblem, int]:
    """``problem`` on ``attribution.path``: the straight paths as they are (no forward), or in blocks
    (:func:`block_path`) with the forwards that took."""
    if cfg.path != "blocks":
        return problem, 0
    return block_path(problem, input_ids, cfg.path_block, cfg.eval_batch_size, cfg.target_fn)


def attribute_paths(inputs: QuestionInputs, estimator: Callable[[int], Estimator]) -> QuestionResult:
    """The paper's estimators (eg, ig, kronrod, certified) on the question: the explained answers' widths
    attributed along the paths from every reference, ``estimator(k)`` on collection k (the method's own,
    ``methods/paper.py``); one row per target (or a failure). ``inputs.targets`` overrides ``cfg.target``."""
    model, q, cfg = inputs.model, inputs.question, inputs.cfg
    device = model_device(model)  # type: ignore[arg-type]
    prompt = prompt_of(model, q.input_ids, device)
    w_x, betp = input_width(model, prompt, cfg.target_fn)
    predicted = int(betp.argmax())
    chosen = inputs.targets
    targets = chosen if chosen is not None else explained_targets(cfg.target, predicted, q.answer_idx)
    if not bool(torch.isfinite(w_x).all() & torch.isfinite(betp).all()):
        return QuestionResult([], nonfinite_failure(q, targets, "input width", -1, [], cfg))
    objective = Objective.build(targets, cfg.route, cfg.target_fn)
    results: list[CollectionResult] = []
    prepared_all: list[torch.Tensor] = []
    collections = prepared_collections(model, q, inputs.pool, cfg, inputs.pad_id)
    forward_evals = 1
    for k, (refs, natural) in enumerate(collections):
        prep = prepared_widths(model, prompt, refs, cfg.eval_batch_size, cfg.target_fn)
        forward_evals += len(refs) * (2 if cfg.reference == "aligned" else 1)  # + natural width of the pair
        bad = _nonfinite_widths(refs.record_ids, prep, natural)
        if bad is not None:
            return QuestionResult([], nonfinite_failure(q, targets, bad[0], k, bad[1], cfg))
        spc, on_batch = cfg.samples_per_call, inputs.on_batch
        read = None if q.read is None else ReadGroups(q.read, cfg.token_reduction)
        problem = PathProblem(
            model, objective, prompt, refs, prep, w_x, spc, cfg.reuse_prefix, on_batch, read=read
        )
        problem, evals = on_path(problem, q.input_ids, cfg)
        forward_evals += evals
        res = estimator(k).attribute(problem)
        forward_evals += res.forwards
        if res.nonfinite_refs:
            refs_bad = [refs.record_ids[i] for i in res.nonfinite_refs]
            return QuestionResult([], nonfinite_failure(q, targets, "gradient", k, refs_bad, cfg))
        results.append(res)
        prepared_all.append(prep)
    e = torch.stack([r.e for r in results]).mean(0)  # (T, L, d), float32 average of collections (App. B.2)
    if not bool(torch.isfinite(e).all()):
        return QuestionResult([], nonfinite_failure(q, targets, "averaged attribution", -1, [], cfg))
    run = QuestionRun(q, cfg, predicted, w_x, betp, e, results, collections, prepared_all, forward_evals)
    rows = [TargetAttribution.build(run, t, target) for t, target in enumerate(targets)]
    return QuestionResult(rows, traces=[r.trace for r in results])
