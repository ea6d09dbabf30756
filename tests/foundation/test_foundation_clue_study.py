"""The training-reference clue studies (``controlled_direct_kronrod``: training prompts fitted by position;
``controlled_direct_kronrod_sequence``: aligned by token sequence) are local's model and questions explained
against training prompts to App. B.4's tolerance: their train stage is local's (DVC reuses it), and only the
attribution and the model-randomisation budget differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from xurs_pipeline.config import compose, train_run_hash, validate
from xurs_pipeline.data.dataset import data_config_hash

ROOT = Path(__file__).resolve().parents[2]


def _composed(experiment: str):  # type: ignore[no-untyped-def]
    return validate(compose([f"experiment={experiment}"], conf_dir=ROOT / "conf"))


@pytest.mark.parametrize(
    ("experiment", "alignment"),
    [("controlled_direct_kronrod", "position"), ("controlled_direct_kronrod_sequence", "sequence")],
)
def test_the_clue_studies_reuse_locals_model_and_explain_against_training_prompts(experiment, alignment):
    local, study = _composed("local"), _composed(experiment)
    assert train_run_hash(study) == train_run_hash(local)  # the same trained classifier
    assert data_config_hash(study.data) == data_config_hash(local.data)
    a = study.attribution
    assert (a.method, a.reference, a.result_filter) == ("kronrod", "train", "without_result")
    assert a.reference_alignment == alignment
    assert a.kronrod_tolerance == 0.01  # App. B.4's median tolerance on the bound of R (Eq. 9)
    assert a.kronrod_max_evals >= 15 * a.kronrod_intervals * a.refs_per_collection
    assert local.attribution.reference == "aligned"  # the aligned arm stays the default


def test_the_target_comparison_is_the_clue_study_for_each_target_at_equal_budget() -> None:
    """Issue 23 item 5: width, entropy and BetP over the same questions, references, estimator, budget and
    tolerance (attribute_targets copies the main run's attribution settings but the target)."""
    study, targets = _composed("controlled_direct_kronrod_sequence"), _composed("controlled_direct_targets")
    assert train_run_hash(targets) == train_run_hash(study)
    assert targets.attribution == study.attribution
    assert targets.attribution.target_fn == "width"
    assert set(targets.evaluation.targets) == {"width", "entropy", "betp"}
