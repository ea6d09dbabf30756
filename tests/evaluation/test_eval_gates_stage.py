"""The ``gates`` stage on V2 records with imperfect predictions, and on data the gates do not apply to.

Prompts and predictions are written at their contract paths (no model: the gates need masses only); the
stage's table must hold exactly :func:`gate_checks`'s values, and its metrics the same numbers.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xurs_pipeline.config import RootConfig, validate
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.synthetic.v2 import generate_v2
from xurs_pipeline.evaluation.controlled import controlled_predictions
from xurs_pipeline.evaluation.gate_results import GATE_COLUMNS
from xurs_pipeline.evaluation.gates import gate_checks
from xurs_pipeline.io import ArtifactError, Provenance, read_parquet, read_provenance, write_parquet
from xurs_pipeline.tasks import gates as gates_stage

GATES = {"accuracy_min": 0.5, "width_error_max": 0.1}  # thresholds reach the table from the config


def make_cfg(artifacts: Path, **evaluation: object) -> RootConfig:
    return validate(
        {
            "paths": {"artifacts": str(artifacts)},
            "data": {"source": "synthetic_v2", "families": [1, 2, 1], "cases_per_family": 1},
            "evaluation": {"gates": GATES, **evaluation},
        }
    )


def v2_prompts() -> pd.DataFrame:
    records = generate_v2(families=(1, 2, 1), cases_per_family=1, seed=3)
    rows = [
        {
            "record_id": r.record_id,
            "split": r.split,
            "source": r.source,
            "answer_idx": r.answer_idx,
            "input_ids": [1, 2],
            "sections": ["special", "question"],
            "eligible": [False, True],
            **dataclasses.asdict(r.synthetic),
        }
        for r in records
    ]
    return pd.DataFrame(rows)


def noisy_predictions(prompts: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Targets mixed with random masses (valid), one row pushed off the simplex (invalid)."""
    rng = np.random.default_rng(seed)
    target = np.stack(prompts["target_masses"].to_numpy())
    masses = 0.7 * target + 0.3 * rng.dirichlet(np.ones(15), size=len(target))
    dev = np.flatnonzero(prompts["split"].to_numpy() == "dev")
    masses[dev[0], 0] += 0.1
    return pd.DataFrame({"record_id": prompts["record_id"], "masses": [list(m) for m in masses]})


def write_inputs(cfg: RootConfig, prompts: pd.DataFrame, predictions: pd.DataFrame | None) -> None:
    root = Path(cfg.paths.artifacts)
    write_parquet(
        prompts, root / "prepared" / "prompts.parquet", Provenance("prompts", 1, data_config_hash(cfg.data))
    )
    if predictions is not None:
        write_parquet(predictions, root / "predict" / "predictions.parquet", Provenance("predictions", 1))


def test_gate_table_and_metrics_equal_gate_checks(tmp_path: Path):
    cfg = make_cfg(tmp_path)
    prompts = v2_prompts()
    predictions = noisy_predictions(prompts)
    write_inputs(cfg, prompts, predictions)
    gates_stage.run(cfg)

    table = read_parquet(tmp_path / "gates" / "gates.parquet", Provenance("gates", 1))
    assert list(table.columns) == list(GATE_COLUMNS)
    expected = {
        (split, check.group, check.name): check
        for split in ("dev", "test")
        for check in gate_checks(controlled_predictions(prompts, predictions, split), cfg.evaluation.gates)
    }
    group_name = {"all": "gates", "familiar": "gates_familiar", "unseen": "gates_unseen"}
    got = {(r.split, group_name[r.group], r.name): r for r in table.itertuples(index=False)}
    assert set(got) == set(expected)
    for key, check in expected.items():
        row = got[key]
        assert (row.value, row.threshold, row.direction, row.n, row.passed) == (
            check.value,
            check.threshold,
            check.direction,
            check.n,
            check.passed,
        ), key
    assert table.loc[table["name"] == "accuracy_with_result", "threshold"].eq(0.5).all()
    dev = table[table["split"] == "dev"].set_index(["group", "name"])
    assert dev.loc[("all", "valid_share"), "value"] == pytest.approx(1 - 1 / 64)  # one of 64 dev rows
    assert {"familiar", "unseen"} <= set(table["group"])
    assert not table["passed"].all()

    metrics = json.loads((tmp_path / "gates" / "gates.json").read_text())
    assert read_provenance(tmp_path / "gates" / "gates.json").schema == "gate_metrics"
    for split, rows in table.groupby("split"):
        entry = metrics[split]
        for row in rows.itertuples(index=False):
            value = entry[row.name] if row.group == "all" else entry[row.group][row.name]
            assert value == row.value
        assert entry["n_failed"] == int((~rows["passed"]).sum())
        assert entry["n_checks"] == len(rows)
        assert entry["passed"] is bool(rows["passed"].all())


@pytest.mark.parametrize(
    ("prompts_of", "gate_splits", "reason"),
    [
        (
            lambda p: p.drop(columns=["pair_id", "target_masses"]).assign(source="medqa"),
            ["dev", "test"],
            "(source medqa) lack the controlled-data columns",
        ),
        (lambda p: p, ["train"], "no predictions on evaluation.gate_splits=['train']"),
    ],
)
def test_data_without_gates_writes_an_empty_table_and_the_reason(
    tmp_path: Path, prompts_of, gate_splits, reason
):
    cfg = make_cfg(tmp_path, gate_splits=gate_splits)
    prompts = v2_prompts()
    predictions = noisy_predictions(prompts)
    write_inputs(cfg, prompts_of(prompts), predictions[~prompts["split"].eq("train")])
    gates_stage.run(cfg)

    table = read_parquet(tmp_path / "gates" / "gates.parquet", Provenance("gates", 1))
    assert table.empty
    assert {c: str(t) for c, t in table.dtypes.items()} == GATE_COLUMNS
    metrics = json.loads((tmp_path / "gates" / "gates.json").read_text())
    assert set(metrics) == {"skipped", "_provenance"}
    assert reason in metrics["skipped"]


def test_missing_predictions_fail_naming_the_file(tmp_path: Path):
    cfg = make_cfg(tmp_path)
    write_inputs(cfg, v2_prompts(), None)
    with pytest.raises(ArtifactError, match=r"predictions\.parquet: missing artifact"):
        gates_stage.run(cfg)
    assert not (tmp_path / "gates").exists()
