"""Run-level checks on hand-built attribution artifacts: IG per-reference residuals, leave-one-collection-out,
aligned-reference endpoints and localisation rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.numpy import save_file

from xurs_pipeline.evaluation.config import NumericsThresholds, RankingThresholds
from xurs_pipeline.evaluation.evidence import (
    endpoint_checks,
    localisation_by_target,
    localisation_summary,
    localisation_table,
)
from xurs_pipeline.evaluation.run_checks import CheckedRun, completeness_checks, leave_one_out_checks

SECTIONS = [
    "special",
    "question",
    "question",
    "option_A",
    "option_B",
    "option_C",
    "option_D",
    "answer_prefix",
]
L = len(SECTIONS)


def frame(**overrides: object) -> pd.DataFrame:
    base = {
        "record_id": ["q1"],
        "target": [0],
        "method": ["eg"],
        "reference": ["train"],
        "token_signed": [[0.0] * L],
        "token_magnitude": [[0.0, 1, 2, 3, 0.5, 0.5, 0.5, 0.1]],
        "width_input": [0.4],
        "residual": [0.02],
        "reference_residual": [[0.001, 0.03]],
        "width_reference_natural": [[0.9]],
        "width_reference_prepared": [[0.398]],
        "prepared_input_ids": [[]],
        "changed_positions": [[]],
        "grad_evals": [64],
        "coords_file": ["q1.c0.safetensors"],
    }
    base.update({k: [v] for k, v in overrides.items()})
    return pd.DataFrame(base)


PROMPTS = pd.DataFrame(
    {
        "record_id": ["q1"],
        "split": ["test"],
        "input_ids": [list(range(L))],
        "sections": [SECTIONS],
        "eligible": [[s in ("question", "option_A") for s in SECTIONS]],
        "answer_idx": [0],
        "clue_positions": [[2]],
        "case_positions": [[1, 2, 3]],
    }
)


def test_completeness_uses_rows_for_eg_and_every_reference_for_ig(tmp_path: Path):
    eg = completeness_checks(
        CheckedRun("r", frame(), tmp_path), NumericsThresholds(), NumericsThresholds("mean")
    )
    assert {c.group for c in eg} == {"completeness_eg_train"}
    assert [(c.name, c.value, c.passed) for c in eg] == [
        ("median_residual", 0.02, False),
        ("max_residual", 0.02, True),
    ]
    ig = completeness_checks(
        CheckedRun("r", frame(method="ig"), tmp_path), NumericsThresholds(), NumericsThresholds("mean")
    )
    assert [c.name for c in ig] == ["mean_residual", "max_residual"]
    assert ig[0].value == pytest.approx(0.0155)  # mean over the two references, not the row residual
    assert ig[1].value == pytest.approx(0.03)


def test_leave_one_collection_out_from_coordinate_files(tmp_path: Path):
    rng = np.random.default_rng(0)
    base = rng.normal(size=(L, 4))
    collections = {f"e_collection_{k}": base + 0.01 * rng.normal(size=(L, 4)) for k in range(3)}
    (tmp_path / "coords").mkdir()
    save_file(
        {"e": np.mean(list(collections.values()), axis=0), **collections},
        str(tmp_path / "coords" / "q1.c0.safetensors"),
    )
    table, checks = leave_one_out_checks(CheckedRun("r", frame(), tmp_path), PROMPTS, RankingThresholds())
    assert sorted(set(table["comparison"])) == [f"leave_out_collection_{k}" for k in range(3)]
    assert len(checks) == 15  # 5 Table 6 criteria x 3 omitted collections
    overlap = [c for c in checks if c.name == "mean_overlap_top20"]
    assert all(c.value == 1.0 for c in overlap)  # 8 tokens < 20: every position is shared
    single = tmp_path / "single"
    (single / "coords").mkdir(parents=True)
    save_file({"e": base}, str(single / "coords" / "q1.c0.safetensors"))
    empty, none = leave_one_out_checks(CheckedRun("s", frame(), single), PROMPTS, RankingThresholds())
    assert empty.empty
    assert none == []


def test_endpoints_only_for_aligned_rows_and_ig_uses_the_reference_residual():
    assert endpoint_checks(frame(), 0.01) == []
    (check,) = endpoint_checks(frame(reference="aligned", method="ig"), 0.01)
    assert check.case == "q1:c0"
    assert check.delta_natural == pytest.approx(0.4 - 0.9)
    assert check.delta_aligned == pytest.approx(0.002)
    assert check.residual == pytest.approx(0.001)
    assert check.warning
    with pytest.raises(ValueError, match="natural reference width"):
        endpoint_checks(frame(reference="aligned", width_reference_natural=[None]), 0.01)


def test_localisation_rows_and_forced_zero_from_aligned_ids():
    # only position 2 differs between the input and the aligned reference
    aligned = frame(reference="aligned", prepared_input_ids=[0, 1, 9, 3, 4, 5, 6, 7])
    table = localisation_table(aligned, PROMPTS).set_index("region")
    assert table.loc["case_text", "clue_share"] == pytest.approx(2 / 6)
    assert table.loc["all_text", "clue_share"] == pytest.approx(2 / 7.6)
    assert list(table.loc["case_text", "forced_zero"]) == [1, 3]
    assert table.loc["all_text", "best_rank"] == 2  # position 3 (magnitude 3) ranks first
    zero = localisation_table(frame(token_magnitude=[0.0] * L), PROMPTS)
    assert zero["note"].str.contains("all-zero").all()
    assert localisation_table(frame(), PROMPTS.drop(columns="clue_positions")).empty


def _localised(clue: list[float], control: list[float], ranks: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "record_id": [f"q{i}" for i in range(len(clue))],
            "region": "case_text",
            "clue_share": clue,
            "control_mean_share": control,
            "best_rank": ranks,
        }
    )


def test_localisation_summary_is_the_mean_over_questions_with_a_bootstrap_interval():
    rng = np.random.default_rng(0)
    clue = rng.uniform(0.4, 0.9, 30)
    control = rng.uniform(0.0, 0.2, 30)
    ranks = [1] * 20 + [3] * 10
    summary = localisation_summary(_localised(clue, control, ranks), 2000, 0.95, "percentile", 0)["case_text"]
    assert summary["questions"] == 30
    assert summary["mean_clue_share_pct"] == pytest.approx(100 * clue.mean())
    assert summary["mean_difference_pp"] == pytest.approx(100 * (clue - control).mean())
    assert summary["ci_low"] < summary["mean_difference_pp"] < summary["ci_high"]
    assert summary["ci_low"] > 0  # the clue holds far more than its windows: the interval excludes zero
    assert (summary["median_best_rank"], summary["best_rank_1_share"]) == (1.0, pytest.approx(2 / 3))
    # a clue-blind attribution: clue and windows hold the same share up to noise, the interval covers zero
    blind = rng.uniform(0.1, 0.2, 30)
    noise = localisation_summary(
        _localised(blind, blind + rng.normal(0, 0.02, 30), [5] * 30), 2000, 0.95, "percentile", 0
    )["case_text"]
    assert noise["ci_low"] < 0 < noise["ci_high"]
    assert localisation_summary(pd.DataFrame(), 2000, 0.95, "percentile", 0) == {}


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval by its formula (independent of scipy's binomtest)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_localisation_by_target_says_which_target_finds_the_clue():
    """Width puts the clue (position 2) first on every question; entropy on 3 of 10 (position 3 wins on the
    rest): the rank-1 shares, their Wilson intervals and each target's residuals come out per target."""
    n = 10
    ids = [f"q{i}" for i in range(n)]
    prompts = pd.concat([PROMPTS.assign(record_id=rid) for rid in ids], ignore_index=True)
    clue_first = [0.0, 1, 5, 2, 0.5, 0.5, 0.5, 0.1]
    clue_second = [0.0, 1, 2, 5, 0.5, 0.5, 0.5, 0.1]
    width = pd.concat(
        [frame(record_id=rid, target_fn="width", residual=0.001 * (i + 1)) for i, rid in enumerate(ids)]
    )
    width["token_magnitude"] = [clue_first] * n
    entropy = pd.concat([frame(record_id=rid, target_fn="entropy", residual=0.02) for rid in ids])
    entropy["token_magnitude"] = [clue_first] * 3 + [clue_second] * (n - 3)
    table = localisation_by_target(pd.concat([width, entropy]), prompts, 500, 0.95, "percentile", 0)
    case = table[table["region"] == "case_text"].set_index("target_fn")
    assert case.loc["width", "best_rank_1_share"] == 1.0
    assert case.loc["entropy", "best_rank_1_share"] == pytest.approx(0.3)
    for fn, k in (("width", 10), ("entropy", 3)):
        assert case.loc[fn, "rank_1_ci"] == pytest.approx(_wilson(k, n), abs=1e-9)
        assert case.loc[fn, "questions"] == n
    assert case.loc["width", "residual_median"] == pytest.approx(0.0055)
    assert case.loc["width", "residual_max"] == pytest.approx(0.010)
    assert case.loc["entropy", "residual_max"] == pytest.approx(0.02)
    assert case.loc["width", "mean_clue_share_pct"] == pytest.approx(100 * 5 / 8)
    assert set(table["region"]) == {"all_text", "case_text"}
    assert localisation_by_target(width, prompts, 500, 0.95, "percentile", 0).empty  # one target: nothing
