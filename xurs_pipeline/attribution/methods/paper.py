"""The paper's estimators as attribution methods: Expected Gradients (Eq. 3), Integrated Gradients per
reference and adaptive Gauss-Kronrod quadrature (``attribution/estimators.py``), every collection of
references averaged (App. B.2), with their completeness residual (Eq. 9) and error bound per question.
They explain a question through the engine (``question.attribute_paths``: references, prefix reuse, block
paths, sharded budgets); the function-level ``scores`` of the token methods has no counterpart here."""

from __future__ import annotations

from xurs_pipeline.attribution.methods.base import AttributionMethod, QuestionInputs
from xurs_pipeline.attribution.question import QuestionResult, attribute_paths


class PathMethod(AttributionMethod):
    """``eg``, ``ig`` or ``kronrod``: ``attribution.method`` names the estimator."""

    def explain(self, inputs: QuestionInputs) -> QuestionResult:
        i = inputs
        return attribute_paths(i.model, i.question, i.pool, self.cfg, i.pad_id, i.on_batch, i.targets)


class ExpectedGradients(PathMethod):
    name = "eg"


class IntegratedGradients(PathMethod):
    name = "ig"


class KronrodIG(PathMethod):
    name = "kronrod"
