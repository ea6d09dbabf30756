"""Table 1 names the estimator that made it: method, IG quadrature, precision, references, evaluations."""

from __future__ import annotations

import pandas as pd

from xurs_pipeline.evaluation.mask_eval import attribution_budget
from xurs_pipeline.reporting.tables import effects_frame


def _attributions(method: str, quadrature: str, precision: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "record_id": ["a", "b"],
            "method": [method] * 2,
            "quadrature": [quadrature] * 2,
            "precision": [precision] * 2,
            "reference": ["train"] * 2,
            "reference_record_ids": [["r1", "r2"]] * 2,
            "grad_evals": [64, 96],
        }
    )


def _budget_text(frame: pd.DataFrame) -> str:
    metrics = {
        "targets": {"width": {"questions": 2, "mean_advantage": 0.1, "ci_low": 0.0, "ci_high": 0.2}},
        "budget": attribution_budget(frame),
    }
    return str(effects_frame(metrics, "local")["budget"].iloc[0])


def test_ig_budget_names_quadrature_and_precision() -> None:
    text = _budget_text(_attributions("ig", "gausslegendre", "bfloat16"))
    assert text == "ig (gausslegendre, bfloat16), 2 refs, 80 gradient evaluations"


def test_eg_budget_has_no_quadrature() -> None:
    text = _budget_text(_attributions("eg", "", "float32"))
    assert text == "eg (float32), 2 refs, 80 gradient evaluations"
