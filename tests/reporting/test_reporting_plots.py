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
    save = plots.save_figure

    def keep(fig, path):
        drawn[Path(path).stem] = fig.axes[0]
        fig.canvas.draw()  # ticks are final only once drawn
        return save(fig, path)

    monkeypatch.setattr(plots, "save_figure", keep)
    rng = np.random.default_rng(n)
    width = 0.52 + 0.03 * rng.random(n)  # a narrow cluster, as a head-only model gives
    plots.width_by_correctness(width, rng.random(n) > 0.5, tmp_path / "w.png")
    plots.surviving_total(0.9 + 0.2 * rng.random(n), tmp_path / "s.png")
    plots.advantage_per_question(rng.normal(size=n), (-0.1, 0.2), tmp_path / "a.png")
    plots.topk_curve(np.arange(1, 4), rng.random(3), rng.random(3) - 1, rng.random(3) + 1, tmp_path / "k.png")
    plots.residual_vs_evaluations(np.full(n, 64), rng.random(n) / 10, tmp_path / "r.png")
    for name, ax in drawn.items():
        assert all((ax.get_title(), ax.get_xlabel(), ax.get_ylabel())), name
    counted = {
        "w": ax_ticks(drawn["w"], "y"),
        "s": ax_ticks(drawn["s"], "y"),
        "a": ax_ticks(drawn["a"], "x"),
        "k": ax_ticks(drawn["k"], "x"),
    }
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


def test_a_plot_without_data_is_not_drawn_and_says_why(tmp_path):
    """A mass15 head has no Eq. 5 correction (s = NaN everywhere) and `local` masks only k = 1: an empty
    picture and a one-point curve are not drawn; NOT_DRAWN gives the front page the reason."""
    assert plots.surviving_total(np.full(12, np.nan), tmp_path / "s.png") is None
    assert (
        plots.topk_curve(np.array([1]), np.array([0.1]), np.array([0.0]), np.array([0.2]), tmp_path / "k.png")
        is None
    )
    assert plots.residual_vs_evaluations(np.array([8.0]), np.array([np.nan]), tmp_path / "r.png") is None
    assert list(tmp_path.iterdir()) == []
    assert "mass15" in plots.NOT_DRAWN["surviving_total"]
    assert "k = 1" in plots.NOT_DRAWN["topk_curve"]
    # with data they are drawn: s partly NaN keeps the finite values, two values of k make a curve
    assert plots.surviving_total(np.array([np.nan, 1.1, 0.9]), tmp_path / "s.png").is_file()
    assert plots.topk_curve(
        np.array([1, 2]), np.array([0.1, 0.2]), np.zeros(2), np.ones(2), tmp_path / "k.png"
    ).is_file()


def _labels(fig, ax) -> dict[str, list]:
    """Each axis's drawn, non-empty tick labels with their boxes in pixels."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return {
        name: [
            (t.get_text(), t.get_window_extent(renderer))
            for t in axis.get_ticklabels(which="both")
            if t.get_visible() and t.get_text()
        ]
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis))
    }


def _overlapping(labels: list) -> list[tuple[str, str]]:
    pairs = [(a, b) for i, a in enumerate(labels) for b in labels[i + 1 :]]
    return [(a[0], b[0]) for a, b in pairs if a[1].overlaps(b[1])]


RESIDUAL_CASES = {
    "one evaluation count (fixed IG, `local`)": (np.full(24, 36.0), np.linspace(0.0005, 0.009, 24)),
    "a narrow range of evaluations (kronrod, sequence-aligned)": (
        np.linspace(270, 420, 8),
        np.linspace(0.0004, 0.0028, 8),
    ),
    "decades of evaluations and residuals": (
        np.array([8, 64, 512, 4096]),
        np.array([0.2, 0.03, 0.001, 1e-5]),
    ),
}


@pytest.mark.parametrize("case", list(RESIDUAL_CASES))
def test_residual_plot_has_readable_ticks_and_more_than_one_x_value(tmp_path, monkeypatch, case):
    """The residual plot's tick labels never overlap and each axis has at least two; with one evaluation
    count (every explanation the same) the x axis is the explanations, not a single column of points."""
    seen = {}
    save = plots.save_figure

    def keep(fig, path):
        seen["labels"] = _labels(fig, fig.axes[0])
        seen["x"] = fig.axes[0].lines[0].get_xdata()
        return save(fig, path)

    monkeypatch.setattr(plots, "save_figure", keep)
    evaluations, residual = RESIDUAL_CASES[case]
    plots.residual_vs_evaluations(evaluations, residual, tmp_path / "r.png")
    for axis, labels in seen["labels"].items():
        assert len(labels) >= 2, (axis, [text for text, _ in labels])
        assert not _overlapping(labels), (axis, _overlapping(labels))
    assert np.unique(seen["x"]).size == residual.size


def test_the_overlap_check_catches_crowded_labels(tmp_path):
    """The check above must fail on the old log axis of a narrow range: minor labels 3x10^2, 4x10^2 ..."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.5, 1.5))
    ax.loglog([270, 420], [0.0004, 0.0028], "o")
    ax.set_yticks([0.001, 0.0011, 0.0012])  # crowded on purpose
    assert _overlapping(_labels(fig, ax)["y"])
    plt.close(fig)
