"""Every report picture is written as a real PNG of sensible size."""

from __future__ import annotations

import numpy as np

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
