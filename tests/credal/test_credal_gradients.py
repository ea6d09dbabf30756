"""Gradients of the corrected width: autograd vs the App. A quotient rule and Eq. 7, finite differences,
and finiteness at the kinks (q_S = 0, s = 1)."""

from __future__ import annotations

import pytest
import torch
from credal_cases import beliefs_for_targets, mixed_beliefs

from xurs_pipeline.credal import (
    FOCAL_SETS,
    beliefs_to_masses,
    closed_form_width,
    correction_stats,
    credal_width,
)

# (14, 4): 1 where c ∈ S and |S| > 1, for the proper subsets S (the sets of u_c, Eq. 6)
U_SETS = torch.tensor(
    [[float(c in subset and len(subset) > 1) for c in range(4)] for subset in FOCAL_SETS[:14]],
    dtype=torch.float64,
)


def smooth_beliefs(n: int, seed: int, margin: float = 1e-4) -> torch.Tensor:
    """Float64 beliefs at which every kink is at least ``margin`` away (derivatives exist)."""
    b = mixed_beliefs(n, torch.Generator().manual_seed(seed))
    stats = correction_stats(b)
    keep = (stats.intermediate.abs().amin(-1) > margin) & ((stats.s - 1).abs() > margin)
    keep &= (b > margin).all(-1) & (b < 1 - margin).all(-1)
    return b[keep]


def row_gradients(value: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """d value[i] / d b[i] for every row i (rows are independent), (n, 14)."""
    (grad,) = torch.autograd.grad(value.sum(), b, retain_graph=True)
    return grad


@pytest.mark.parametrize("option", range(4))
def test_autograd_width_gradient_equals_appendix_a_quotient_rule(option: int) -> None:
    b = smooth_beliefs(400, seed=7).requires_grad_(True)
    stats = correction_stats(b)
    width = credal_width(beliefs_to_masses(b))[:, option]
    u = (stats.q @ U_SETS)[:, option]
    s, r = stats.s, stats.r
    grad_w = row_gradients(width, b)
    grad_u, grad_s, grad_r = (row_gradients(x, b) for x in (u, s, r))
    n, d = (u + r).detach()[:, None], (s + r).detach()[:, None]
    s_, u_ = s.detach()[:, None], u.detach()[:, None]
    expected = grad_u / d + (s_ - u_) / d**2 * grad_r - n / d**2 * grad_s  # App. A
    torch.testing.assert_close(grad_w, expected, atol=1e-12, rtol=1e-10)

    rescaled = stats.s.detach() > 1
    assert int(rescaled.sum()) > 20, "s > 1 must be exercised"
    assert int((~rescaled).sum()) > 20, "s < 1 must be exercised"
    eq7 = grad_u / s_ - u_ / s_**2 * grad_s  # Eq. 7, s > 1
    torch.testing.assert_close(grad_w[rescaled], eq7[rescaled], atol=1e-12, rtol=1e-10)
    shortfall = grad_u - grad_s  # s < 1: W = u + 1 - s
    torch.testing.assert_close(grad_w[~rescaled], shortfall[~rescaled], atol=1e-12, rtol=1e-10)
    # the shortfall term is really present below s = 1 (∇r = -∇s ≠ 0)
    assert grad_r[~rescaled].abs().sum(-1).gt(0).all()


def _gradcheck(f, b: torch.Tensor) -> bool:
    """Finite differences vs autograd; ``fast_mode`` compares random projections v^T J u (same verdicts as
    the dense Jacobian here, 100x cheaper)."""
    return torch.autograd.gradcheck(f, (b,), eps=1e-6, atol=1e-7, fast_mode=True, raise_exception=False)


def _widths(conversion: str):
    return {
        "closed_form": lambda x: closed_form_width(x, conversion),
        "masses": lambda x: credal_width(beliefs_to_masses(x, conversion)),
    }


@pytest.mark.parametrize("conversion", ["positive_part", "mobius"])
def test_width_gradients_match_finite_differences(conversion: str) -> None:
    b = smooth_beliefs(200, seed=11, margin=1e-3)[:24].requires_grad_(True)
    assert b.shape[0] == 24
    for name, width in _widths(conversion).items():
        assert _gradcheck(width, b), name


@pytest.mark.parametrize("conversion", ["positive_part", "mobius"])
def test_the_fast_gradcheck_catches_a_wrong_gradient_in_one_entry(conversion: str) -> None:
    """The must-fail case: the same widths with the backward pass off by 1e-3 in one belief entry."""
    b = smooth_beliefs(200, seed=11, margin=1e-3)[:24].requires_grad_(True)
    bump = torch.zeros_like(b)
    bump[5, 3] = 1e-3

    def wrong(width):
        def f(x: torch.Tensor) -> torch.Tensor:
            y = x.clone()
            y.register_hook(lambda g: g + bump)  # forward unchanged, gradient wrong at (5, 3)
            return width(y)

        return f

    for name, width in _widths(conversion).items():
        assert not _gradcheck(wrong(width), b), name


BOUNDARY_CASES = {
    # s = 1 exactly (dyadic values), r = 0, and many m~_S = 0 exactly
    "s_equals_one": {(1,): 0.25, (2,): 0.25, (1, 2): 0.5},
    # q_S = 0 kinks with s < 1 and with s > 1
    "zeros_below_one": {(0,): 0.25, (0, 1): 0.125},
    "zeros_above_one": {(0,): 0.75, (1, 2): 0.5},
    # all beliefs zero: s = 0, r = 1, every intermediate value on its kink
    "vacuous": {},
}


@pytest.mark.parametrize("case", sorted(BOUNDARY_CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_are_finite_at_kinks(case: str, dtype: torch.dtype) -> None:
    b = beliefs_for_targets(BOUNDARY_CASES[case]).to(dtype).requires_grad_(True)
    stats = correction_stats(b)
    assert int((stats.intermediate == 0).sum()) > 0, "the case must sit on a q_S = 0 kink"
    if case == "s_equals_one":
        assert stats.s.item() == 1.0
    for option in range(4):
        for width in (credal_width(beliefs_to_masses(b))[option], closed_form_width(b)[option]):
            (grad,) = torch.autograd.grad(width, b)
            assert torch.isfinite(grad).all()
