"""``bench/swap_read_rule.py``: the cue scores of a row, and its table of the two rules side by side."""

from __future__ import annotations

import json

import pytest
from bench_scripts import load_bench_script


@pytest.fixture(scope="module")
def bench():
    return load_bench_script("swap_read_rule")


def test_cue_totals_sum_each_cue_magnitudes(bench) -> None:
    assert bench.cue_totals([0.1, 0.5, 0.2, 0.4, 0.3], ((1, 3), (4,))) == pytest.approx([0.9, 0.3])
    assert [bench.first_cue(t) for t in ([0.9, 0.3], [0.2, 0.4], [0.5, 0.5])] == [1, 2, 0]  # the study's rule


def _record(question: str, rule: str, evals: int, top: int, exhausted: bool = False) -> dict:
    return {"question": question, "rule": rule, "evals": evals, "seconds": evals / 5, "R": 0.004,
            "exhausted": exhausted, "top": top}  # fmt: skip


def test_table_pairs_the_rules_and_counts_where_they_rank_alike(bench, tmp_path, capsys) -> None:
    out = tmp_path / "records.jsonl"
    rows = [
        _record("p1", "bound", 510, 1), _record("p1", "read", 60, 1),
        _record("p2", "bound", 450, 2), _record("p2", "read", 600, 1, exhausted=True),
        _record("p3", "bound", 570, 2),
    ]  # fmt: skip
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench.table(out)
    text = capsys.readouterr().out
    assert "| p1 | 510, 102, 0.0040, 1 | 60, 12, 0.0040, 1 | yes |" in text
    assert "| p2 | 450, 90, 0.0040, 2 | 600, 120, 0.0040, 1 (exhausted) | no |" in text
    assert "| p3 | 570, 114, 0.0040, 2 | - | - |" in text
    assert "| bound | 3 | 510 | 102 |" in text
    assert "| read | 2 | 330 | 66 |" in text
    assert "| 2 | 0.69 | 1 of 2 |" in text  # 330 / 480
