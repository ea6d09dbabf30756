"""The ``certified`` rule's point placement (attribution/certified_warp.py): a pilot's F along each path puts
the lattice where the path swings. On closed-form paths: the map and its weights are a change of variables
(unbiased over the shifts, exact in the limit), the swing's stretch gets its share of the points, and on
paths that swing within ~0.005 of α the rule holds in well under half the evaluations of the uniform
lattice, with the per-token split still within App. B.4 of the exact one."""

from __future__ import annotations

import numpy as np
import pytest
from test_certified_diagnosis import Swings

from xurs_pipeline.attribution.certified import CertifiedSpec, certify, tent_nodes
from xurs_pipeline.attribution.certified_warp import FLOOR, Warp, warp_from_pilot


def _step_warp() -> Warp:
    """A pilot at 0.2, 0.4, 0.6, 0.8 on F rising by 1 between 0.4 and 0.6 (flat elsewhere), F(0)=0, F(1)=1."""
    values = np.array([[1.0], [0.0], [1.0], [0.0]])  # F at 0.8, 0.2, 0.6, 0.4
    return warp_from_pilot(np.array([0.8, 0.2, 0.6, 0.4]), values, np.array([0.0]), np.array([1.0]))


def test_the_warp_gives_the_swing_its_share_of_the_points_and_keeps_a_floor_elsewhere() -> None:
    warp = _step_warp()
    np.testing.assert_allclose(warp.alpha, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    inside = np.interp(0.6, warp.alpha, warp.tau) - np.interp(0.4, warp.alpha, warp.tau)
    assert inside == pytest.approx(FLOOR * 0.2 + (1 - FLOOR))  # the swing's interval: most of τ
    tau = (np.arange(10000) + 0.5) / 10000
    alpha = warp.point(tau)
    assert np.all(np.diff(alpha) >= 0)
    assert 0 <= alpha[0] <= alpha[-1] <= 1
    share = np.mean((alpha >= 0.4) & (alpha < 0.6))
    assert share == pytest.approx(inside, abs=1e-3)
    assert np.mean(alpha < 0.2) == pytest.approx(FLOOR * 0.2, abs=1e-3)  # never below the floor
    np.testing.assert_allclose(np.mean(warp.weight(tau)), 1.0, rtol=1e-9)  # ∫ φ'(τ) dτ = 1


def test_a_flat_pilot_leaves_the_lattice_uniform() -> None:
    flat = warp_from_pilot(np.array([0.25, 0.75]), np.zeros((2, 1)), np.zeros(1), np.zeros(1))
    tau = np.linspace(0, 1, 11)
    np.testing.assert_allclose(flat.point(tau), tau)
    np.testing.assert_allclose(flat.weight(tau), 1.0)


def test_the_warped_lattice_is_unbiased_over_shifts_and_exact_in_the_limit() -> None:
    """Any integrand, here one not shaped like the warp: the mean over shifts of the 2-point warped rule is
    its integral (a fixed shift is off); one shift converges, at first order (φ' jumps at the knots)."""
    warp = _step_warp()

    def rule(u: float, n: int) -> float:
        tau = tent_nodes(u, n)
        return float(np.mean(np.exp(3 * warp.point(tau)) * warp.weight(tau)))

    exact = (np.exp(3) - 1) / 3
    shifts = (np.arange(20000) + 0.5) / 20000
    means = np.array([rule(u, 2) for u in shifts])
    assert means.mean() == pytest.approx(exact, rel=1e-4)
    assert abs(means[0] - exact) > 0.1 * exact
    errors = np.array([abs(rule(0.37, n) - exact) for n in (256, 1024, 4096)])
    assert errors[-1] < 1e-3 * exact
    assert np.all(errors[1:] < errors[:-1] / 2)  # falls at least as 1/n


def _swings(refs: int, width: float, seed: int = 0) -> tuple[Swings, np.ndarray]:
    rng = np.random.default_rng(seed)
    widths = rng.uniform(0.5, 2.0, refs) * width
    swings = Swings(rng.uniform(0.1, 0.9, refs), widths, rng.uniform(0.3, 1.0, refs))
    start = np.array([[swings.f(r, np.array([0.0]))[0]] for r in range(refs)])
    return swings, start


def test_on_paths_that_swing_the_pilot_certifies_in_under_half_the_evaluations() -> None:
    """16 references, each swinging within ~0.005 of α at its own place: uniform and placed lattices both
    meet the rule, the placed one (pilot included) in under half the evaluations, its averaged residual the
    exact one and its per-token split within 0.10 relative distance of the exact (nothing rescaled)."""
    swings, start = _swings(16, 0.005)
    uniform = certify(swings, swings.gap(), CertifiedSpec(max_evals=16384), seed=5, start=start)
    placed = certify(swings, swings.gap(), CertifiedSpec(max_evals=16384, pilot_nodes=8), seed=5, start=start)
    assert not uniform.exhausted
    assert not placed.exhausted
    assert placed.evals < 0.5 * uniform.evals
    exact = swings.gap().mean() * Swings.SPLIT  # (3,): the averaged per-token integrals
    got = placed.vectors[0].numpy()
    assert placed.measures[0][0] == pytest.approx(abs(got.sum() - swings.gap().mean()), abs=1e-9)
    assert np.linalg.norm(got - exact) / np.linalg.norm(exact) <= 0.10
    assert placed.nodes.sum() + 8 * 16 == placed.evals  # the pilot is counted
