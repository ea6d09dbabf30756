"""One question explained by a token method: the explained answers as the paper's estimators fix them, one
:class:`~xurs_pipeline.attribution.methods.base.Problem` per answer, one ``attributions`` row each.

The problem's reference (``layer_ig``, ``replacement='reference'``) is the first reference the paper's
estimators would use: the first training prompt of the first collection fitted to the question
(``attribution.reference_alignment``), or the zero embeddings (``reference='zero'``). Its spans are
consecutive blocks of ``attribution.span_tokens`` positions (``shapley_span``: wider where a prompt would
have more than ``SHAPLEY_MAX_SPANS`` of them, :func:`span_width`). Columns a token method has no value for
(the quadrature, the per-reference lists, path roughness) are empty or NaN; ``residual`` is the method's own
completeness residual where it has one (``layer_ig``), NaN otherwise; ``forward_evals`` counts the input's
own forward with the method's.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from xurs_pipeline.attribution.config import SHAPLEY_MAX_SPANS, AttributionConfig
from xurs_pipeline.attribution.endpoints import input_width, prompt_of
from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.methods.base import AttributionMethod, Problem, TokenScores
from xurs_pipeline.attribution.model import Prompt, block_list_name, frozen, model_device
from xurs_pipeline.attribution.question import (
    QuestionInputs,
    QuestionResult,
    explained_targets,
    nonfinite_failure,
)
from xurs_pipeline.attribution.records import TargetAttribution, coords_name
from xurs_pipeline.attribution.references import prepare_training, prepare_zero

NAN = float("nan")


class TokenMethod(AttributionMethod):
    """A method that reads one reference at a time (or none) and explains a question through this module."""

    def explain(self, inputs: QuestionInputs) -> QuestionResult:
        return explain_tokens(self, inputs)


def middle_block(model: nn.Module) -> nn.Module:
    """The block halfway up the model's blocks (its longest ``nn.ModuleList``), ``(n - 1) // 2`` of ``n``
    (``layer_ig``'s layer): never the last one when there are two or more, whose output reaches the head
    only at the pooled position."""
    blocks = model.get_submodule(block_list_name(model))
    return blocks[(len(blocks) - 1) // 2]


def span_width(cfg: AttributionConfig, length: int) -> int:
    """Positions per span of ``cfg``'s span method on a prompt of ``length`` positions: ``span_tokens``; for
    ``shapley_span``, which enumerates every coalition of the spans, widened where that would give more than
    ``SHAPLEY_MAX_SPANS`` spans to the fewest positions that give at most as many, ceil(length / 12), so
    that every prompt is explained (the explanation says the width it grouped)."""
    if cfg.method != "shapley_span":
        return cfg.span_tokens
    return max(cfg.span_tokens, -(-length // SHAPLEY_MAX_SPANS))


def spans_of(length: int, span_tokens: int) -> tuple[tuple[int, ...], ...]:
    """Consecutive blocks of ``span_tokens`` positions covering 0..length-1 (the last may be shorter)."""
    return tuple(tuple(range(s, min(s + span_tokens, length))) for s in range(0, length, span_tokens))


def first_reference(inputs: QuestionInputs, like: torch.Tensor) -> tuple[torch.Tensor, str]:
    """The one reference (1, L, d) in ``like``'s dtype and its record id (module docstring)."""
    q, cfg, pool = inputs.question, inputs.cfg, inputs.pool
    if cfg.reference == "zero":
        refs = prepare_zero(q.input_ids)
    elif pool is None:
        raise ValueError("attribution.reference='train' needs a ReferencePool of training prompts")
    else:
        first = (pool.token_ids[0][:1], pool.record_ids[0][:1])
        refs = prepare_training(q.input_ids, *first, inputs.pad_id, like.device, cfg.reference_alignment)
    index = torch.zeros(1, dtype=torch.long, device=like.device)
    return refs.embeds(inputs.model.embed, index, like).detach(), refs.record_ids[0]


def problem_of(method: TokenMethod, inputs: QuestionInputs, prompt: Prompt, target: int) -> Problem:
    """The function ``method`` explains for answer ``target`` of the question (module docstring)."""
    cfg, model = inputs.cfg, inputs.model
    reference = first_reference(inputs, prompt.embeds)[0] if cfg.reads_one_reference else None
    spans = spans_of(prompt.length, span_width(cfg, prompt.length))
    layer = method.layer(model)  # type: ignore[arg-type]
    return Problem(
        classifier_mass_fn(model),
        prompt.embeds,
        target,
        cfg.target_fn,
        prompt.attention_mask,
        prompt.position_ids,
        reference,
        spans,
        layer,
        cfg.eval_batch_size,
        cfg.reuse_prefix,
    )


def explain_tokens(method: TokenMethod, inputs: QuestionInputs) -> QuestionResult:
    """``method`` on one question: one row per explained answer, or the non-finite failure."""
    model, q, cfg = inputs.model, inputs.question, inputs.cfg
    prompt = prompt_of(model, q.input_ids, model_device(model))  # type: ignore[arg-type]
    w_x, betp = input_width(model, prompt, cfg.target_fn)
    predicted = int(betp.argmax())
    targets = inputs.targets or explained_targets(cfg.target, predicted, q.answer_idx)
    if not bool(torch.isfinite(w_x).all() & torch.isfinite(betp).all()):
        return QuestionResult([], nonfinite_failure(q, targets, "input width", -1, [], cfg))
    reference_ids = [first_reference(inputs, prompt.embeds)[1]] if cfg.reads_one_reference else []
    header = {"record_id": q.record_id, "predicted": predicted, "answer_idx": q.answer_idx}
    header |= {"betp": betp.cpu().tolist(), "reference_record_ids": reference_ids}
    rows = []
    with frozen(model):  # type: ignore[arg-type]
        for target in targets:
            scores = method.attribute(problem_of(method, inputs, prompt, target))
            if not np.isfinite(scores.signed).all():
                return QuestionResult([], nonfinite_failure(q, targets, "token score", -1, [], cfg))
            if inputs.on_batch is not None:
                inputs.on_batch(scores.grad_evals)
            answer = {"target": target, "width_input": float(w_x[target])}
            rows.append(token_row(cfg, header | answer, scores))
    return QuestionResult(rows)


# the columns a token method has no value for: the quadrature, the paths, the per-reference lists
NO_PATH: dict[str, object] = {
    "quadrature": "",
    "path": "",
    "plan_seeds": [],
    "width_reference_mean": NAN,
    "width_difference": NAN,
    "residual_collections": [],
    "budget_exhausted": False,
    "path_variation": NAN,
    "roughness": NAN,
    "reference_variation": [],
    "width_reference_natural": [],
    "width_reference_prepared": [],
    "reference_draws": [],
    "reference_points": [],
    "reference_residual": [],
    "changed_positions": [],
    "prepared_input_ids": [],
}


def token_row(cfg: AttributionConfig, header: dict, scores: TokenScores) -> TargetAttribution:
    """The ``attributions`` row of one explained answer: ``header`` (record_id, target, predicted,
    answer_idx, width_input, betp, reference_record_ids) and the method's scores."""
    references = len(header["reference_record_ids"])
    run = {"method": cfg.method, "reference": cfg.reference if references else "none", "route": cfg.route}
    run |= {"target_fn": cfg.target_fn, "precision": cfg.precision, "seed": cfg.seed}
    signed = scores.signed
    tokens = {"n_tokens": len(signed), "token_signed": signed.tolist(), "signed_sum": float(signed.sum())}
    tokens |= {"token_magnitude": scores.magnitude.tolist(), "reference_collection": [0] * references}
    cost = {"residual": scores.residual, "error_bound": scores.error_bound, "grad_evals": scores.grad_evals}
    cost |= {"forward_evals": scores.forwards + 1}
    coords = {"e": scores.coordinates.detach().float().cpu().contiguous()}
    name = coords_name(header["record_id"], header["target"])
    return TargetAttribution(**header, **run, **tokens, **cost, **NO_PATH, coords_file=name, coords=coords)  # type: ignore[arg-type]
