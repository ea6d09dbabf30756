"""Gates on real V2 records: the pairings follow the data package's conventions (App. D.2)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from xurs_pipeline.data.synthetic.v2 import generate_v2
from xurs_pipeline.evaluation.config import GateThresholds
from xurs_pipeline.evaluation.controlled import controlled_predictions
from xurs_pipeline.evaluation.gates import gate_checks
from xurs_pipeline.io import ArtifactError


@pytest.fixture(scope="module")
def v2() -> tuple[pd.DataFrame, pd.DataFrame]:
    records = generate_v2(families=(1, 2, 1), cases_per_family=1, seed=3)
    rows = [{"record_id": r.record_id, "split": r.split, "answer_idx": r.answer_idx} for r in records]
    prompts = pd.DataFrame(
        [{**row, **dataclasses.asdict(r.synthetic)} for row, r in zip(rows, records, strict=True)]
    )
    predictions = prompts[["record_id"]].assign(masses=[list(m) for m in prompts["target_masses"]])
    return prompts, predictions


def test_pairings_match_the_v2_design(v2):
    prompts, predictions = v2
    data = controlled_predictions(prompts, predictions, "dev")
    n = len(data.pred)  # 2 families x 1 case x 2 templates x 2 details x 4 arrangements x 2 versions = 64
    assert n == 64
    assert data.result_pairs.shape == (32, 2)
    assert data.has_result[data.result_pairs[:, 0]].all()
    assert not data.has_result[data.result_pairs[:, 1]].any()
    assert data.irrelevant_pairs.shape == (32, 2)  # morning vs evening, everything else equal
    assert data.arrangement_pairs.shape == (48, 2)  # arrangement 0 vs 1, 2, 3
    rows = prompts[prompts["split"] == "dev"].reset_index(drop=True)
    a, b = rows.iloc[data.arrangement_pairs[0, 0]], rows.iloc[data.arrangement_pairs[0, 1]]
    assert a["arrangement"] == 0
    assert b["arrangement"] != 0
    for column in ("detail", "has_result", "template_id"):
        assert a[column] == b[column]


def test_prescribed_targets_pass_every_gate_and_rearrangements_map_back(v2):
    prompts, predictions = v2
    checks = gate_checks(controlled_predictions(prompts, predictions, "dev"), GateThresholds())
    failed = [(c.group, c.name, c.value) for c in checks if not c.passed]
    assert not failed
    rearr = [c for c in checks if c.name == "rearrangement_mass_change"]
    assert len(rearr) == 2  # familiar and unseen templates
    assert all(c.value == pytest.approx(0.0, abs=1e-12) for c in rearr)  # targets remap exactly


def test_predictions_ignoring_the_arrangement_fail_the_rearrangement_gate(v2):
    prompts, predictions = v2
    canonical = prompts.set_index("record_id")
    # predict, for every arrangement, the masses of arrangement 0 (as if the model ignored option order)
    base = {
        rid: canonical.loc[rid.replace(f"_a{a}_", "_a0_"), "target_masses"]
        for rid, a in zip(canonical.index, canonical["arrangement"], strict=True)
    }
    lazy = predictions.assign(masses=[list(base[r]) for r in predictions["record_id"]])
    checks = gate_checks(controlled_predictions(prompts, lazy, "dev"), GateThresholds())
    verdicts = {(c.group, c.name): c.passed for c in checks}
    assert verdicts[("gates_familiar", "rearrangement_mass_change")] is False
    assert verdicts[("gates_unseen", "rearrangement_mass_change")] is False


def test_missing_columns_or_predictions_raise(v2):
    prompts, predictions = v2
    with pytest.raises(ArtifactError, match="controlled-data columns"):
        controlled_predictions(prompts.drop(columns="pair_id"), predictions, "dev")
    with pytest.raises(ArtifactError, match="no predictions for controlled split 'dev'"):
        controlled_predictions(prompts, predictions[predictions["record_id"].str.startswith("none")], "dev")
    assert np.isin(["dev", "test", "train"], prompts["split"]).all()
