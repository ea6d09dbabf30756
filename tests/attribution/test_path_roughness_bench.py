"""``bench/path_roughness.py``'s arithmetic: the lattice's RMS error on a known integrand (second order on a
smooth F, far smaller on the warp where F swings in a short stretch) and the points its power law asks for."""

from __future__ import annotations

import numpy as np
import pytest
from bench_scripts import load_bench_script

from xurs_pipeline.attribution import path_warp


@pytest.fixture(scope="module")
def bench():
    return load_bench_script("path_roughness")


def test_the_plain_lattice_error_falls_as_n_to_the_minus_two_on_a_smooth_path(bench) -> None:
    grid = np.linspace(0.0, 1.0, 4097)
    f = np.sin(3 * grid)[None, :]  # one reference, a smooth path
    rng = np.random.default_rng(0)
    coarse, fine = (float(bench.lattice_rms(f, None, n, rng)[0]) for n in (8, 16))
    assert 3.0 <= coarse / fine <= 5.0  # 4 for a second-order rule


def test_the_warp_beats_the_plain_lattice_on_a_short_swing(bench) -> None:
    grid = np.linspace(0.0, 1.0, 2049)
    f = (1 / (1 + np.exp(-(grid - 0.4) / 0.01)))[None, :]

    def values(i, a):
        return np.interp(a, grid, f[0])[:, None]

    warp = path_warp.fit(values, f[:, :1], f[0, -1:], 31)
    rng = np.random.default_rng(1)
    plain, warped = (float(bench.lattice_rms(f, w, 16, rng)[0]) for w in (None, warp))
    assert warped * 5 <= plain


def test_the_points_needed_follow_the_power_law_and_the_references(bench) -> None:
    """σ(n) = 4 / n through (16, 4/16), (32, 4/32): at M = 64 the target σ is 0.01 x 8 / 1.96, so the points
    are 4 x 1.96 / 0.08; more references need fewer points; a σ that does not fall needs infinitely many."""
    sigma = [4 / 16, 4 / 32]
    assert bench.needed_points([16, 32], sigma, 64) == pytest.approx(4 * 1.959963984540054 / 0.08)
    assert bench.needed_points([16, 32], sigma, 256) < bench.needed_points([16, 32], sigma, 64)
    assert bench.needed_points([16, 32], [0.1, 0.1], 64) == float("inf")
    assert bench.needed_points([16, 32], [0.5, 1e-4], 64) == 32.0  # already within: the points measured


def test_identical_references_sharing_a_shift_integrate_as_the_finer_lattice(bench) -> None:
    """G references with one integrand, at u + i / (G n): their mean is the G n-point lattice's integral, so
    the averaged residual's RMS is the finer lattice's (second order), far below the independent shifts'
    σ(n) / sqrt(G)."""
    grid = np.linspace(0.0, 1.0, 4097)
    f = np.tile(np.sin(3 * grid), (8, 1))
    rng = np.random.default_rng(2)
    finer, coarse = (float(bench.lattice_rms(f[:1], None, n, rng)[0]) for n in (64, 8))
    shared, independent = (bench.averaged_rms(f, None, 8, g, rng) for g in (8, 1))
    assert shared == pytest.approx(finer, rel=0.3)
    assert independent == pytest.approx(coarse / np.sqrt(8), rel=0.3)
    assert shared * 10 < independent


def test_references_with_their_own_swings_gain_nothing_from_shared_shifts(bench) -> None:
    """Each reference's F swings at its own place: the group's nodes fall on different stretches of the paths,
    so the averaged residual's RMS stays that of independent shifts."""
    grid = np.linspace(0.0, 1.0, 2049)
    f = np.stack([1 / (1 + np.exp(-(grid - c) / 0.02)) for c in np.linspace(0.15, 0.85, 8)])
    rng = np.random.default_rng(3)
    shared, independent = (bench.averaged_rms(f, None, 16, g, rng) for g in (8, 1))
    assert shared == pytest.approx(independent, rel=0.3)


def test_groups_that_do_not_divide_the_references_are_refused(bench) -> None:
    f = np.zeros((4, 5))
    with pytest.raises(ValueError, match="--groups 3: must divide --refs 4"):
        bench.averaged_rms(f, None, 4, 3, np.random.default_rng(0))


def test_the_error_sits_in_the_stretch_where_f_swings(bench) -> None:
    """One swing at α = 0.7, flat elsewhere: the plain lattice's error sits in the stretch holding it (the
    other stretches' parts are exact), and one stretch holds 80% of it; a smooth path spreads its error."""
    grid = np.linspace(0.0, 1.0, 2049)
    swing = (1 / (1 + np.exp(-(grid - 0.7) / 0.005)))[None, :]
    rms = bench.segment_rms(swing, None, 16, 8, np.random.default_rng(4))
    assert int(np.argmax(rms)) == 5  # [0.625, 0.75)
    assert rms[:4].max() < 1e-6 * rms[5]
    assert bench.holding(rms) == 1
    smooth = bench.segment_rms(np.sin(6 * grid)[None, :], None, 16, 8, np.random.default_rng(5))
    assert bench.holding(smooth) >= 4
    assert bench.holding(np.zeros(8)) == 0  # an exact integral: no stretch holds any error


def test_the_segments_add_up_to_the_integral_error(bench) -> None:
    """With one segment, its RMS is the whole integral's (``lattice_rms``) on the same shifts."""
    grid = np.linspace(0.0, 1.0, 513)
    f = np.stack([np.sin(5 * grid), grid**3])
    whole = bench.lattice_rms(f, None, 8, np.random.default_rng(6))
    one = bench.segment_rms(f, None, 8, 1, np.random.default_rng(6))
    assert one[0] == pytest.approx(float(np.sqrt((whole**2).mean())), rel=1e-9)


def test_turning_points_are_counted_per_path(bench) -> None:
    grid = np.linspace(0.0, 1.0, 1001)
    assert bench.sign_changes(np.stack([np.sin(2 * np.pi * 2 * grid), grid])) == [4, 0]
