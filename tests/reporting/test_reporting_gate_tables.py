"""The gates table and the gate rows of the verdicts table, from ``gates/gates.parquet`` frames."""

from __future__ import annotations

import pandas as pd

from xurs_pipeline.evaluation.gate_results import GATE_COLUMNS, empty_gate_frame
from xurs_pipeline.reporting import tables
from xurs_pipeline.reporting.render import write_table

GATES = pd.DataFrame(
    [
        ("dev", "all", "valid_share", 1.0, 1.0, ">=", 6, True),
        ("dev", "familiar", "width_error", 0.36, 0.05, "<=", 6, False),
        ("test", "unseen", "accuracy_with_result", 0.9, 0.8, ">=", 3, True),
    ],
    columns=list(GATE_COLUMNS),
).astype(GATE_COLUMNS)
CHECKS = pd.DataFrame(
    [("completeness_eg_zero", "median_residual", 0.001, 0.01, "<=", 4, True)],
    columns=["group", "name", "value", "threshold", "direction", "n", "passed"],
)


def test_verdicts_keep_every_check_and_name_gates_as_the_checks_stage_did():
    frame = tables.verdicts_frame(CHECKS, GATES)
    assert list(frame["group"]) == [
        "completeness_eg_zero",
        "gates_dev",
        "gates_dev_familiar",
        "gates_test_unseen",
    ]
    assert list(frame["value"]) == [0.001, *GATES["value"]]
    assert list(frame["passed"]) == [True, *GATES["passed"]]
    assert list(frame["rule"]) == ["<= 0.01", ">= 1", "<= 0.05", ">= 0.8"]
    assert tables.verdicts_frame(CHECKS, empty_gate_frame())[CHECKS.columns].equals(CHECKS)


def test_gates_table_shows_split_templates_gate_value_threshold_and_verdict(tmp_path):
    md, _, csv = write_table(tables.gates_frame(GATES), tables.GATES, tmp_path, "smoke", "abc")
    assert "| dev | familiar | width_error | 6 | 0.3600 | <= 0.05 | FAIL |" in md.read_text()
    back = pd.read_csv(csv)
    assert list(back["value"]) == list(GATES["value"])
    assert list(back["rule"]) == [">= 1", "<= 0.05", ">= 0.8"]
