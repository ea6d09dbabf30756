"""Every attribution method behind one call: ``method_for(cfg).explain(QuestionInputs)`` gives one
question's ``attributions`` rows, whichever method ``attribution.method`` names; a token method's
``scores(TokenProblem)`` is Captum's ``attribute`` on any masses function.

- ``base``: the call shape, the problem, the record (scores, forwards, gradients, residual, bound).
- ``paper``: eg, ig, kronrod (the engine of ``attribution/estimators.py``).
- ``perturbation``: occlusion_token, occlusion_span, shapley_span.
- ``gradient``: grad_l2, grad_x_input, layer_ig, sequential_ig.
- ``token_question``: a token method on one question of the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable

from xurs_pipeline.attribution.certified_method import CertifiedAverage
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.methods.base import (
    AttributionMethod,
    QuestionInputs,
    TokenMethod,
    TokenProblem,
    TokenScores,
)
from xurs_pipeline.attribution.methods.gradient import GradientL2, GradientXInput, LayerIG, SequentialIG
from xurs_pipeline.attribution.methods.paper import ExpectedGradients, IntegratedGradients, KronrodIG
from xurs_pipeline.attribution.methods.perturbation import OcclusionSpan, OcclusionToken, SpanShapley
from xurs_pipeline.attribution.question import QuestionResult

# attribution.config.METHODS names these, in this order (tests/attribution/test_methods.py)
REGISTRY: dict[str, type[AttributionMethod]] = {
    cls.name: cls
    for cls in (
        *(ExpectedGradients, IntegratedGradients, KronrodIG, CertifiedAverage),
        *(OcclusionToken, OcclusionSpan, SpanShapley, GradientL2, GradientXInput, LayerIG, SequentialIG),
    )
}


def method_for(cfg: AttributionConfig) -> AttributionMethod:
    """The method ``attribution.method`` names, configured by ``cfg``."""
    return REGISTRY[cfg.method](cfg)


def attribute_question(
    model: object,
    q: object,
    pool: object,
    cfg: AttributionConfig,
    pad_id: int,
    on_batch: Callable[[int], None] | None = None,
    targets: tuple[int, ...] | None = None,
) -> QuestionResult:
    """One question explained by ``attribution.method``: one row per explained answer (or the failure)."""
    return method_for(cfg).explain(QuestionInputs(model, q, pool, cfg, pad_id, on_batch, targets))


__all__ = [
    "REGISTRY",
    "AttributionMethod",
    "QuestionInputs",
    "TokenMethod",
    "TokenProblem",
    "TokenScores",
    "attribute_question",
    "method_for",
]  # fmt: skip
