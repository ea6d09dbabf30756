"""One question explained by a token method: the explained answers as the paper's estimators fix them, one
:class:`~xurs_pipeline.attribution.methods.base.TokenProblem` per answer, one ``attributions`` row each.

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

from xurs_pipeline.attribution.config import SHAPLEY_MAX_SPANS, AttributionConfig
from xurs_pipeline.attribution.endpoints import input_width, prompt_of
from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.methods.base import QuestionInputs, TokenMethod, TokenProblem, TokenScores
from xurs_pipeline.attribution.methods.gradient import middle_block
from xurs_pipeline.attribution.model import Prompt, frozen, model_device
from xurs_pipeline.attribution.question import QuestionResult, explained_targets, nonfinite_failure
from xurs_pipeline.attribution.records import TargetAttribution, coords_name
from xurs_pipeline.attribution.references import prepare_training, prepare_zero

NAN = float("nan")


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
        refs = prepare_training(q.input_ids, pool.token_ids[0][:1], pool.record_ids[0][:1], inputs.pad_id,
                                like.device, cfg.reference_alignment)  # fmt: skip
    index = torch.zeros(1, dtype=torch.long, device=like.device)
    return refs.embeds(inputs.model.embed, index, like).detach(), refs.record_ids[0]


def problem_of(method: TokenMethod, inputs: QuestionInputs, prompt: Prompt, target: int) -> TokenProblem:
    """The function ``method`` explains for answer ``target`` of the question (module docstring)."""
    cfg, model = inputs.cfg, inputs.model
    reference = first_reference(inputs, prompt.embeds)[0] if cfg.reads_one_reference else None
    return TokenProblem(
        classifier_mass_fn(model), prompt.embeds, target, cfg.target_fn, prompt.attention_mask,
        prompt.position_ids, reference, spans_of(prompt.length, span_width(cfg, prompt.length)),
        middle_block(model) if method.name == "layer_ig" else None,  # type: ignore[arg-type]
        cfg.eval_batch_size, cfg.reuse_prefix,
    )  # fmt: skip


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
    rows = []
    with frozen(model):  # type: ignore[arg-type]
        for target in targets:
            scores = method.scores(problem_of(method, inputs, prompt, target))
            if not np.isfinite(scores.signed).all():
                return QuestionResult([], nonfinite_failure(q, targets, "token score", -1, [], cfg))
            if inputs.on_batch is not None:
                inputs.on_batch(scores.grad_evals)
            header = {"record_id": q.record_id, "target": target, "predicted": predicted,
                      "answer_idx": q.answer_idx, "width_input": float(w_x[target]),
                      "betp": betp.cpu().tolist(), "reference_record_ids": reference_ids}  # fmt: skip
            rows.append(token_row(cfg, header, scores))
    return QuestionResult(rows)


def token_row(cfg: AttributionConfig, header: dict, scores: TokenScores) -> TargetAttribution:
    """The ``attributions`` row of one explained answer: ``header`` (record_id, target, predicted,
    answer_idx, width_input, betp, reference_record_ids) and the method's scores."""
    coords = scores.coords if scores.coords is not None else torch.from_numpy(scores.signed)[:, None]
    return TargetAttribution(
        **header, method=cfg.method, reference=cfg.reference if header["reference_record_ids"] else "none",
        route=cfg.route, target_fn=cfg.target_fn, precision=cfg.precision, quadrature="", path="",
        seed=cfg.seed, plan_seeds=[], n_tokens=len(scores.signed), token_signed=scores.signed.tolist(),
        token_magnitude=scores.magnitude.tolist(), width_reference_mean=NAN, width_difference=NAN,
        signed_sum=float(scores.signed.sum()), residual=scores.residual, residual_collections=[],
        error_bound=scores.error_bound, budget_exhausted=False, path_variation=NAN, roughness=NAN,
        reference_variation=[], reference_collection=[0] * len(header["reference_record_ids"]),
        width_reference_natural=[], width_reference_prepared=[], reference_draws=[], reference_points=[],
        reference_residual=[], changed_positions=[], prepared_input_ids=[], grad_evals=scores.grad_evals,
        forward_evals=scores.forwards + 1, coords_file=coords_name(header["record_id"], header["target"]),
        coords={"e": coords.detach().float().cpu().contiguous()},
    )  # fmt: skip
