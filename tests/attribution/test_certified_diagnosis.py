"""Where the ``certified`` rule's error sits (attribution/certified_diagnosis.py), on closed-form paths that
swing from 0 to 1 within a short stretch (the trained model's paths), the stretch and the rough reference
known: the diagnostic must find them, and move with them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xurs_pipeline.attribution.certified import CertifiedSpec, certify
from xurs_pipeline.attribution.certified_diagnosis import Recorder, per_reference, per_segment


class Swings:
    """M references, 3 tokens: F_r(α) = h_r sigmoid((α - centre_r) / width_r) shared by the tokens in fixed
    proportions, so each reference's slope is a bump of height ~h_r / (4 width_r) at its centre and its
    integral is F_r(1) - F_r(0) exactly."""

    SPLIT = np.array([0.6, 0.3, 0.1])

    def __init__(self, centres: list[float], widths: list[float], heights: list[float]) -> None:
        self.c, self.w, self.h = (np.asarray(v, dtype=np.float64) for v in (centres, widths, heights))

    def f(self, ref: int, alphas: np.ndarray) -> np.ndarray:
        return self.h[ref] / (1.0 + np.exp(-(alphas - self.c[ref]) / self.w[ref]))

    def gap(self) -> np.ndarray:
        return np.array([self.f(r, np.array([1.0]))[0] - self.f(r, np.array([0.0]))[0]
                         for r in range(len(self.c))])[:, None]  # fmt: skip

    def __call__(self, nodes: list[tuple[int, np.ndarray]]) -> list[tuple[np.ndarray, torch.Tensor]]:
        out = []
        for r, alphas in nodes:
            s = self.f(r, alphas) * (1.0 - self.f(r, alphas) / self.h[r]) / self.w[r]  # dF/dα (n,)
            out.append((s[:, None], torch.tensor((s.sum() * self.SPLIT)[None, :])))
        return out


def _diagnose(swings: Swings, budget: int) -> tuple:
    recorder = Recorder()
    spec = CertifiedSpec(tolerance=1e-4, vector_tolerance=1e-3, max_evals=budget, first_nodes=2)
    report = certify(recorder.wrap(swings), swings.gap(), spec, seed=3)
    return report, per_reference(recorder, swings.gap()), per_segment(recorder, len(swings.c), segments=8)


@pytest.mark.parametrize("centre", [0.55, 0.20])
def test_the_error_sits_in_the_steep_stretch_of_the_rough_reference(centre: float) -> None:
    """Three smooth references and one that swings within ~0.02 of α near ``centre``: the rough one holds
    most of Σ rho^2 (its rho as the rule computed it), and the segment holding its swing most of the
    located error, far above its share of the evaluations; with the swing moved, the segment moves."""
    swings = Swings([0.5, 0.5, 0.5, centre], [0.3, 0.3, 0.3, 0.005], [0.2, 0.2, 0.2, 1.0])
    report, refs, segments = _diagnose(swings, budget=64)
    assert refs["points"].tolist() == report.nodes.tolist()
    np.testing.assert_allclose(refs["rho"], report.integral[:, 0] - swings.gap()[:, 0], atol=1e-12)
    assert refs["rho2_share"].sum() == pytest.approx(1.0)
    assert refs["rho2_share"].idxmax() == 3
    assert refs.loc[3, "rho2_share"] > 0.9
    steep = int(np.floor(centre * 8))
    assert segments["error_share"].idxmax() == steep
    assert segments.loc[steep, "error_share"] > 2 * segments.loc[steep, "evals_share"]
    assert segments.loc[steep, "variation_share"] > 0.5  # the swing's |dF/dα| is there
    assert segments["evaluations"].sum() == report.evals
    for share in ("evals_share", "variation_share", "error_share"):
        assert segments[share].sum() == pytest.approx(1.0)

