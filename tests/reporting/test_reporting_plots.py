"""Every report picture is written as a real PNG of sensible size, titled, labelled, with integer counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xurs_pipeline.reporting import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_each_plot_writes_a_png(tmp_path):
    rng = np.random.default_rng(0)
    paths = [
        plots.width_by_correctness(rng.random(50), rng.random(50) > 0.5, tmp_path / "w.png"),
        plots.surviving_total(rng.random(50) * 2, tmp_path / "s.png"),
        plots.advantage_per_question(rng.normal(size=20), (-0.1, 0.2), tmp_path / "a.png"),
        plots.topk_curve(
            np.arange(1, 11), rng.random(10), rng.random(10) - 1, rng.random(10) + 1, tmp_path / "k.png"
        ),
        plots.residual_vs_evaluations(
            np.array([8, 64, 512]), np.array([0.2, 0.03, 0.001]), tmp_path / "r.png"
        ),
    ]
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC)
        assert len(data) > 5_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "k.png", "r.png", "s.png", "w.png"]


@pytest.mark.parametrize("n", [32, 1273])
def test_plots_have_titles_labels_integer_counts_and_spread_bins(tmp_path, monkeypatch, n):
    """Issue 19: readable at 32 and at 1,273 questions; no 0.5 questions, no k = 1.5."""
    drawn = {}
    save = plots._save

    def keep(fig, path):
        drawn[Path(path).stem] = fig.axes[0]
        fig.canvas.draw()  # ticks are final only once drawn
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    rng = np.random.default_rng(n)
    width = 0.52 + 0.03 * rng.random(n)  # a narrow cluster, as a head-only model gives
    plots.width_by_correctness(width, rng.random(n) > 0.5, tmp_path / "w.png")
    plots.surviving_total(0.9 + 0.2 * rng.random(n), tmp_path / "s.png")
    plots.advantage_per_question(rng.normal(size=n), (-0.1, 0.2), tmp_path / "a.png")
    plots.topk_curve(np.arange(1, 4), rng.random(3), rng.random(3) - 1, rng.random(3) + 1, tmp_path / "k.png")
    plots.residual_vs_evaluations(np.full(n, 64), rng.random(n) / 10, tmp_path / "r.png")
    for name, ax in drawn.items():
        assert all((ax.get_title(), ax.get_xlabel(), ax.get_ylabel())), name
    counted = {"w": ax_ticks(drawn["w"], "y"), "s": ax_ticks(drawn["s"], "y"),
               "a": ax_ticks(drawn["a"], "x"), "k": ax_ticks(drawn["k"], "x")}  # fmt: skip
    for name, ticks in counted.items():
        assert np.allclose(ticks, np.round(ticks)), (name, ticks)
    bars = [p.get_height() for p in drawn["w"].patches if p.get_height() > 0]
    assert len(bars) >= 4  # the cluster is spread over several bins, not one bar
    assert sum(bars) == n  # counts, not densities


def ax_ticks(ax, which: str) -> np.ndarray:
    axis = ax.yaxis if which == "y" else ax.xaxis
    low, high = ax.get_ylim() if which == "y" else ax.get_xlim()
    ticks = np.asarray(axis.get_majorticklocs())
    return ticks[(ticks >= low) & (ticks <= high)]


def test_surviving_total_of_a_mass15_head_says_there_is_none(tmp_path, monkeypatch):
    """A mass15 head has no Eq. 5 correction, so predictions carry s = NaN: the picture says why instead of
    failing the tables stage (it did on the default experiment)."""
    texts = []
    save = plots._save

    def keep(fig, path):
        texts.extend(t.get_text() for t in fig.axes[0].texts)
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    path = plots.surviving_total(np.full(12, np.nan), tmp_path / "s.png")
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert any("mass15" in t for t in texts)
