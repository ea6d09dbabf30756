"""``bench/swap_table.py --across`` (docs/swap-control.md's table over data seeds), read on the summaries
kept in ``bench/results/``: one row per seed, and a pooled row whose counts are the seeds' sums with
their Wilson interval; a project whose swap stages were skipped is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bench_scripts import load_bench_script
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [ROOT / "bench/results/cpu_swap_idle", ROOT / "bench/results/cpu_swap_seeds34/seed3"]


@pytest.fixture(scope="module")
def swap_table():
    return load_bench_script("swap_table")


def test_the_pooled_row_sums_the_seeds(swap_table) -> None:
    table = swap_table.across(SEEDS).splitlines()
    assert [row.split("|")[1].strip() for row in table[2:]] == ["0", "3", "pooled"]
    k = n = 0
    for project in SEEDS:
        trained = json.loads((project / "data/swap/study/summary.json").read_text())["studies"]["trained"]
        k += round(trained["swap_accuracy"] * trained["n"])
        n += trained["n"]
    ci = binomtest(k, n).proportion_ci(method="wilson")
    assert f"{k}/{n} ({k / n:.2f} [{ci.low:.2f}, {ci.high:.2f}])" == table[-1].split("|")[3].strip()


def test_a_skipped_project_is_refused(swap_table, tmp_path) -> None:
    (tmp_path / "data/swap/study").mkdir(parents=True)
    (tmp_path / "data/swap/study/summary.json").write_text(json.dumps({"skipped": "not two-cue data"}))
    with pytest.raises(SystemExit, match=re.escape("swap stages skipped (not two-cue data)")):
        swap_table.across([tmp_path])
