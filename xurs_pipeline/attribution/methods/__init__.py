"""Every attribution method behind one call: ``method_for(cfg).attribute(Problem) -> TokenScores`` on any
masses function, its input and a batch of references (Captum's ``attribute``), and one question of the
pipeline, ``method_for(cfg).explain(QuestionInputs)``, one ``attributions`` row per explained answer,
whichever method ``attribution.method`` names.

- ``base``: the call, the problem, the record (scores, forwards, gradients, residual, bound), the mean over
  references (App. B.2).
- ``paper``: eg, ig, kronrod, certified (the engine of ``attribution/estimators.py``; on any function
  through ``engine``).
- ``perturbation``: occlusion_token, occlusion_span, shapley_span.
- ``gradient``: grad_l2, grad_x_input, layer_ig, sequential_ig.
- ``token_question``: a token method on one question of the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.methods.base import AttributionMethod, Problem, TokenScores
from xurs_pipeline.attribution.methods.gradient import GradientL2, GradientXInput, LayerIG, SequentialIG
from xurs_pipeline.attribution.methods.paper import (
    CertifiedMethod,
    ExpectedGradientsMethod,
    IntegratedGradientsMethod,
    KronrodMethod,
)
from xurs_pipeline.attribution.methods.perturbation import OcclusionSpan, OcclusionToken, SpanShapley
from xurs_pipeline.attribution.methods.token_question import TokenMethod
from xurs_pipeline.attribution.question import QuestionInputs, QuestionResult

# attribution.config.METHODS names these, in this order (tests/attribution/test_methods.py)
REGISTRY: dict[str, type[AttributionMethod]] = {
    cls.name: cls
    for cls in (
        *(ExpectedGradientsMethod, IntegratedGradientsMethod, KronrodMethod, CertifiedMethod),
        *(OcclusionToken, OcclusionSpan, SpanShapley, GradientL2, GradientXInput, LayerIG, SequentialIG),
    )
}


def method_for(cfg: AttributionConfig) -> AttributionMethod:
    """The method ``attribution.method`` names, with the settings it reads from ``cfg``."""
    return REGISTRY[cfg.method].configured(cfg)


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
    "Problem",
    "QuestionInputs",
    "TokenMethod",
    "TokenScores",
    "attribute_question",
    "method_for",
]
