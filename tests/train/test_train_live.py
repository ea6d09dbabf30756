"""Per-epoch training curves in DVCLive's layout: one TSV per metric, step = epoch, values as recorded."""

from __future__ import annotations

import pandas as pd

from xurs_pipeline.train.live import CURVES, log_history

HISTORY = [
    {
        "epoch": e,
        "train_loss": 1.5 - 0.1 * e,
        "dev_loss": 1.6 - 0.05 * e,
        "dev_answer_nll": 1.4 - 0.02 * e,
        "dev_accuracy": 0.25 + 0.1 * e,
        "lr_head": 1e-3 / (e + 1),
    }
    for e in range(4)
]


def test_each_curve_is_a_tsv_of_the_history(tmp_path):
    out = log_history(HISTORY, tmp_path / "dvclive")
    for key, name in CURVES.items():
        table = pd.read_csv(out / "plots" / "metrics" / f"{name}.tsv", sep="\t")
        assert list(table["step"]) == [h["epoch"] for h in HISTORY]
        assert table[name.split("/")[-1]].tolist() == [h[key] for h in HISTORY]


def test_rewriting_replaces_the_curves_byte_for_byte(tmp_path):
    out = log_history(HISTORY, tmp_path / "dvclive")
    first = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    log_history(HISTORY[:2], out)  # a shorter run: nothing of the longer one is left
    assert pd.read_csv(out / "plots/metrics/loss/train.tsv", sep="\t")["step"].tolist() == [0, 1]
    log_history(HISTORY, out)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == first
    assert [p.name for p in tmp_path.iterdir()] == ["dvclive"]  # no temporary directory left
