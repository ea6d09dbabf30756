"""The evaluation config holds the paper's thresholds; conf/evaluation matches it; bad values name the key."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from xurs_pipeline.evaluation.config import EvaluationConfig, GateThresholds, NumericsThresholds

CONF = Path(__file__).resolve().parents[2] / "conf" / "evaluation"


def test_defaults_are_the_papers():
    cfg = EvaluationConfig()
    assert (cfg.n_random, cfg.top_k_max, cfg.bootstrap_resamples, cfg.confidence) == (20, 10, 10_000, 0.95)
    r = cfg.ranking  # Table 6
    assert (r.median_section_spearman_min, r.top_option_agreement_min, r.mean_topk_overlap_min, r.topk) == (
        0.90,
        0.80,
        0.75,
        20,
    )
    assert (r.median_share_difference_max, r.max_width_difference_max) == (0.02, 1e-6)
    n = cfg.numerics  # Table 7
    assert (n.residual_aggregate, n.residual_center_max, n.max_residual_max) == ("median", 0.01, 0.05)
    assert (n.median_spearman_min, n.median_topk_overlap_min, n.topk) == (0.95, 0.80, 20)
    assert (n.median_cosine_min, n.median_relative_distance_max) == (0.99, 0.10)
    assert (cfg.ig.residual_aggregate, cfg.ig.topk, cfg.ig.residual_center_max) == (
        "mean",
        3,
        0.01,
    )  # App. B.4
    g = cfg.gates  # App. D.3
    assert (g.mass_error_max, g.width_error_max, g.accuracy_min, g.width_drop_share_min) == (
        0.2,
        0.05,
        0.8,
        0.9,
    )
    assert (g.irrelevant_mass_change_max, g.irrelevant_width_change_max) == (0.05, 0.02)
    assert (g.rearrangement_mass_change_max, g.validity_tolerance) == (0.10, 1e-6)


def test_default_yaml_equals_the_dataclass_defaults():
    assert yaml.safe_load((CONF / "default.yaml").read_text()) == asdict(EvaluationConfig())


def test_smoke_yaml_only_shrinks_the_budget():
    smoke = yaml.safe_load((CONF / "smoke.yaml").read_text())
    assert smoke["defaults"] == ["default", "_self_"]
    assert smoke["bootstrap_resamples"] < EvaluationConfig().bootstrap_resamples
    assert not {"ranking", "numerics", "ig", "gates"} & set(smoke)  # thresholds stay the paper's


@pytest.mark.parametrize(
    ("build", "key"),
    [
        (lambda: EvaluationConfig(n_random=0), "evaluation.n_random"),
        (lambda: EvaluationConfig(bootstrap_resamples=10), "evaluation.bootstrap_resamples"),
        # budgets have an upper bound, as the attribution's (2**22)
        (lambda: EvaluationConfig(bootstrap_resamples=2**40), r"bootstrap_resamples=1099511627776: must be"),
        (lambda: EvaluationConfig(n_random=2**40), r"n_random=1099511627776: must be in \[1, 4194304\]"),
        (lambda: EvaluationConfig(swap_layer_ig_steps=2**40), "evaluation.swap_layer_ig_steps=1099511627776"),
        (lambda: EvaluationConfig(confidence=1.0), "evaluation.confidence"),
        (lambda: EvaluationConfig(bootstrap_method="basic"), "evaluation.bootstrap_method"),
        (lambda: EvaluationConfig(targets=["width", "variance"]), "evaluation.targets"),
        (lambda: EvaluationConfig(targets=[]), "evaluation.targets"),
        (lambda: NumericsThresholds(residual_aggregate="max"), "evaluation.numerics.residual_aggregate"),
        (lambda: NumericsThresholds(topk=0), "evaluation.numerics.topk"),
        (lambda: GateThresholds(accuracy_min=1.5), "evaluation.gates.accuracy_min"),
        (lambda: GateThresholds(width_error_max=-0.1), "evaluation.gates.width_error_max"),
        # a tolerance of a width difference at or above 1 (of a mass vector's at or above 2) passes any run
        (lambda: GateThresholds(width_error_max=1.0), r"gates.width_error_max=1.0: must be in \[0, 1\)"),
        (lambda: GateThresholds(mass_error_max=2.0), r"gates.mass_error_max=2.0: must be in \[0, 2\)"),
        (lambda: NumericsThresholds(max_residual_max=1e300), "evaluation.numerics.max_residual_max=1e\\+300"),
        (lambda: EvaluationConfig(reference_shift_warning=5.0), "evaluation.reference_shift_warning=5.0"),
    ],
)
def test_bad_values_name_the_key(build, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        build()
