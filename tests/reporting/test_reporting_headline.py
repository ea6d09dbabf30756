"""Headline metrics: few flat numbers per stage with names unique across stages (what DVC shows)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from xurs_pipeline.evaluation.vector_stability import vector_metrics
from xurs_pipeline.evaluation.verdicts import Check
from xurs_pipeline.reporting.headline import (
    attribute_headline,
    mask_headline,
    predict_headline,
    rerun_headline,
    train_headline,
    verdict_headline,
)
from xurs_pipeline.tasks.runner import write_headline

PREDICT = {
    "dev": {"accuracy": 0.5, "chance": 0.25, "auroc_width": 0.7, "auroc_low_probability": 0.6},
    "test": {"accuracy": 0.4, "chance": 0.25, "auroc_width": 0.8, "auroc_low_probability": 0.9},
}


def test_each_headline_picks_its_numbers_from_the_detail_metrics():
    assert predict_headline(PREDICT, ["dev", "test"]) == {
        "accuracy": 0.4,
        "chance": 0.25,
        "auroc_width": 0.8,
        "auroc_lowp": 0.9,
    }
    assert predict_headline({"dev": PREDICT["dev"]}, ["dev", "test"])["accuracy"] == 0.5  # no test: dev
    assert predict_headline({}, ["dev"]) == {}
    audit = {
        "dev": {"correction_applies": True, "rescaling_pct": 1.0},
        "test": {"correction_applies": True, "rescaling_pct": 12.5},
    }  # Table 8's column
    assert predict_headline(PREDICT, ["dev", "test"], audit)["rescaled"] == 12.5
    mass15 = {"test": {"correction_applies": False, "n": 4}}  # softmax outputs: nothing to rescale
    assert "rescaled" not in predict_headline(PREDICT, ["test"], mass15)
    assert train_headline({"best_epoch": 4, "history": [1, 2]}) == {"best_epoch": 4}
    metrics = {"residual_max": 0.03, "residual_median": 0.01, "budget_exhausted": ["q1"]}
    assert attribute_headline(metrics) == {"R_max": 0.03, "R_median": 0.01, "exhausted": 1}
    targets = {
        "bel": {"mean_advantage": 9, "ci_low": 8, "ci_high": 10},
        "width": {"mean_advantage": 0.2, "ci_low": 0.1, "ci_high": 0.3},
    }
    assert mask_headline(targets) == {"advantage": 0.2, "ci_low": 0.1, "ci_high": 0.3}  # Table 1's width row
    assert verdict_headline("checks", [True, False, False]) == {"checks": 3, "checks_failed": 2}
    assert verdict_headline("gates", []) == {"gates": 0, "gates_failed": 0}


def test_headline_keys_are_unique_across_stages_and_files_are_flat(tmp_path):
    """DVC puts every key of every metrics file into one table: a shared key would be path-prefixed."""
    targets = {"width": {"mean_advantage": 0.2, "ci_low": 0.1, "ci_high": 0.3}}
    files = [
        predict_headline(PREDICT, ["test"]),
        train_headline({"best_epoch": 1}),
        attribute_headline({"residual_max": 0.0, "residual_median": 0.0, **vector_metrics(VECTORS)}),
        mask_headline(targets),
        verdict_headline("checks", [True]),
        verdict_headline("gates", [True]),
        rerun_headline(
            [
                Check("values_main_vs_seed17", "median_cosine", 1.0, 0.99, ">=", 1),
                Check("values_main_vs_seed17", "median_relative_distance", 0.0, 0.1, "<=", 1),
            ],
            ["seed17"],
        ),
    ]
    keys = [k for f in files for k in f]
    assert len(keys) == len(set(keys))
    # `dvc exp show` at 120 columns with --drop/--keep (docs/sweeps.md); the attribute stage's four vector
    # figures appear only with its own rerun (attribution.certified_rerun), so the default shows 17
    assert len(keys) <= 21
    path = write_headline(files[0], tmp_path / "headline.json")
    assert json.loads(path.read_text()) == files[0]  # no provenance header: it would add DVC columns
    with pytest.raises(ValueError, match="must be flat numbers"):
        write_headline({"test": {"accuracy": 1.0}}, tmp_path / "nested.json")


def _vector_checks(run: str, cosine: float, distance: float) -> list[Check]:
    """The two vector checks of App. B.4 the ``checks`` stage makes for a comparison with ``run``."""
    group = f"values_main_vs_{run}"
    return [
        Check(group, "median_cosine", cosine, 0.99, ">=", 3),
        Check(group, "median_relative_distance", distance, 0.10, "<=", 3),
        Check(group, "median_spearman", 0.2, 0.95, ">=", 3),
    ]


def test_the_rerun_headline_is_the_worst_vector_figure_over_the_reruns_only():
    """App. B.4's vector criteria against a rerun in ``dvc metrics show``: the smallest median cosine and
    the largest median relative distance over the reruns; another configuration's comparison run is not a
    rerun; no rerun gives no figure (never a perfect one)."""
    checks = _vector_checks("seed17", 0.999, 0.03) + _vector_checks("seed23", 0.95, 0.25)
    checks += _vector_checks("attribute_other", 0.10, 0.90)  # evaluation.comparison_runs: not a rerun
    figure = rerun_headline(checks, ["seed17", "seed23"])
    assert figure == {"cos_rerun": 0.95, "dist_rerun": 0.25}  # the second rerun fails both criteria
    fails = [c for c in checks if c.group.endswith("seed23") and c.name != "median_spearman"]
    assert not any(c.passed for c in fails)  # the checks that read the same values fail with it
    assert rerun_headline(checks, ["seed17"]) == {"cos_rerun": 0.999, "dist_rerun": 0.03}
    assert rerun_headline(checks, []) == {}
    undefined = _vector_checks("seed17", float("nan"), float("nan"))  # all-zero vectors: a failed check
    assert rerun_headline(undefined, ["seed17"]) == {"cos_rerun": None, "dist_rerun": None}


VECTORS = pd.DataFrame(  # three answers against the attribute stage's own rerun
    {"record_id": ["a", "b", "c"], "target": [0, 0, 1], "cosine": [0.999, 0.95, 0.998]}
).assign(relative_distance=[0.02, 0.31, 0.05])


def test_the_attribute_headline_carries_the_vector_figures_only_with_a_rerun() -> None:
    """With the stage's own rerun: the cosine's median and smallest, the distance's median and largest;
    without one, no figure (nothing was compared: no figure rather than a perfect one); an undefined
    comparison (an all-zero vector) makes every figure None, never a number that could pass."""
    base = {"residual_max": 0.03, "residual_median": 0.01, "budget_exhausted": []}
    headline = attribute_headline({**base, **vector_metrics(VECTORS)})
    assert headline == {
        "R_max": 0.03,
        "R_median": 0.01,
        "exhausted": 0,
        "cos_median": pytest.approx(0.998),
        "cos_min": pytest.approx(0.95),
        "dist_median": pytest.approx(0.05),
        "dist_max": pytest.approx(0.31),
    }
    assert set(attribute_headline(base)) == {"R_max", "R_median", "exhausted"}
    undefined = VECTORS.assign(cosine=[0.999, float("nan"), 0.998])
    figures = vector_metrics(undefined)
    assert figures["rerun_answers"] == 3
    assert [v for k, v in figures.items() if k != "rerun_answers"] == [None] * 4
