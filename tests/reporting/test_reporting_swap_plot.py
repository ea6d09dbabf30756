"""``xurs swap-sweep``'s picture (reporting/swap_plot.py): per method its pooled agreement on the judge's
clear probes, read from the same pooled result as the table, best on top, the baselines marked; nothing
drawn where there is nothing to draw."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.reporting.swap_plot import agreement_plot, agreement_rows

HELD_OUT = Path(__file__).resolve().parents[2] / "results" / "sweeps" / "swap_heldout"


def kept_table() -> dict:
    """The shipped design's kept table as ``xurs swap-sweep`` wrote it (its pooled result under
    ``faithfulness``), which the kept-table tests rebuild from its studies."""
    return json.loads((HELD_OUT / "swap_sweep.json").read_text())


def test_each_method_is_drawn_at_the_tables_clear_agreement_best_on_top() -> None:
    table = kept_table()
    rows = agreement_rows(table["faithfulness"])
    methods = [r for r in table["rows"] if not r["row"].startswith("model ")]  # not the as-trained rows
    shown = {r["row"]: (r["agreement_clear_k"], r["agreement_clear_n"]) for r in methods}
    assert {method: (k, n) for method, _, _, _, k, n, _ in rows} == shown
    shares = [share for _, share, *_ in rows]
    assert shares == sorted(shares)  # drawn bottom to top: the best method last, on top
    assert all(low <= share <= high for _, share, low, high, *_ in rows)
    assert {method for method, *_, baseline in rows if baseline} == set(plan.BASELINES)


def test_the_picture_is_drawn_and_nothing_is_drawn_without_clear_probes(tmp_path: Path) -> None:
    faithful = kept_table()["faithfulness"]
    path = agreement_plot(faithful, 1, tmp_path / "swap_sweep.png")
    assert path == tmp_path / "swap_sweep.png"
    pixels = plt.imread(path)
    assert pixels.shape[0] > 300  # a row a method
    assert pixels.std() > 0.05  # not blank
    assert agreement_plot(None, 0, tmp_path / "none.png") is None
    for by in faithful["methods"].values():
        by[plan.JUDGE]["cells"]["all"]["clear_n"] = 0
    assert agreement_plot(faithful, 1, tmp_path / "empty.png") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["swap_sweep.png"]
