"""Table 1 names the estimator that made it (method, IG quadrature, precision, references, evaluations);
the clue tables (clue masking, localisation summary) come from the metrics files."""

from __future__ import annotations

import pandas as pd

from xurs_pipeline.evaluation.mask_eval import attribution_budget
from xurs_pipeline.reporting.tables import clue_masking_frame, effects_frame, localisation_summary_frame


def _attributions(method: str, quadrature: str, precision: str, path: str = "straight") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "record_id": ["a", "b"],
            "method": [method] * 2,
            "quadrature": [quadrature] * 2,
            "path": [path] * 2,
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
    assert text == "ig (gausslegendre, bfloat16), 2 train refs, 80 gradient evaluations"


def test_a_block_path_is_named_beside_the_quadrature() -> None:
    text = _budget_text(_attributions("kronrod", "gauss_kronrod_15", "float32", path="blocks_16"))
    assert text == "kronrod (gauss_kronrod_15, blocks_16, float32), 2 train refs, 80 gradient evaluations"


def test_eg_budget_has_no_quadrature() -> None:
    text = _budget_text(_attributions("eg", "", "float32"))
    assert text == "eg (float32), 2 train refs, 80 gradient evaluations"


def test_clue_tables_come_from_the_metrics_and_are_empty_without_a_clue() -> None:
    metrics = {
        "clue_masking": {
            "questions": 3,
            "mean_advantage": 0.2,
            "ci_low": 0.1,
            "ci_high": 0.3,
            "mean_d_clue": 0.3,
            "mean_d_window": 0.1,
        }
    }
    row = clue_masking_frame(metrics, "local").iloc[0]
    assert (row["configuration"], row["questions"], row["ci"]) == ("local", 3, (0.1, 0.3))
    assert clue_masking_frame({"clue_masking": {}}, "local").empty
    summary = {
        "case_text": {
            "questions": 3,
            "mean_clue_share_pct": 50.0,
            "mean_difference_pp": 30.0,
            "ci_low": 20.0,
            "ci_high": 40.0,
            "median_best_rank": 1.0,
            "best_rank_1_share": 1.0,
        }
    }
    rows = localisation_summary_frame(summary)
    assert list(rows["region"]) == ["case_text"]
    assert rows["ci"].iloc[0] == (20.0, 40.0)
    assert localisation_summary_frame({}).empty
