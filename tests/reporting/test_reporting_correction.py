"""Table 8 (correction audit) for belief heads, and no row for heads the correction does not apply to."""

from __future__ import annotations

import pytest

from xurs_pipeline.reporting.tables import correction_frame

BELIEF_ROW = {
    "configuration": "c",
    "n": 4,
    "correction_applies": True,
    "rescaling_pct": 25.0,
    "mean_total_adjustment": 0.1,
    "negative_share": 0.5,
}


def test_belief_head_gives_its_row() -> None:
    frame = correction_frame({"test": BELIEF_ROW})
    assert frame.to_dict("records") == [BELIEF_ROW]


def test_mass15_head_gives_no_row_so_the_table_is_skipped_not_failed() -> None:
    audit = {"test": {"configuration": "c", "n": 4, "correction_applies": False}}
    assert correction_frame(audit).empty


def test_missing_split_names_the_splits_it_has() -> None:
    with pytest.raises(KeyError, match=r"no split 'test'; has \['dev'\]"):
        correction_frame({"dev": BELIEF_ROW})
