"""Every public function on float16/bfloat16/float32/float64 and leading shapes (), (3,), (2, 5):
output shape and dtype, agreement with the float64 result on the same rounded inputs, gradients."""

from __future__ import annotations

import pytest
import torch
from credal_cases import mixed_beliefs

from xurs_pipeline.credal import (
    belief,
    belief_of,
    beliefs_to_masses,
    check_masses,
    closed_form_width,
    correction_stats,
    credal_width,
    masses_from_set_logits,
    pignistic,
    plausibility,
    plausibility_of,
)

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
LEADING = [(), (3,), (2, 5)]
# agreement with float64 on identical (already rounded) inputs: about one rounding of the output
TOLERANCE = {torch.float16: 2e-3, torch.bfloat16: 8e-3, torch.float32: 1e-6, torch.float64: 1e-12}


def beliefs_in(dtype: torch.dtype, leading: tuple[int, ...]) -> torch.Tensor:
    count = 1
    for size in leading:
        count *= size
    return mixed_beliefs(count, torch.Generator().manual_seed(3)).reshape(*leading, 14).to(dtype)


@pytest.mark.parametrize("leading", LEADING)
@pytest.mark.parametrize("dtype", DTYPES)
def test_belief_path_shapes_dtypes_and_values(dtype: torch.dtype, leading: tuple[int, ...]) -> None:
    b = beliefs_in(dtype, leading)
    reference = b.to(torch.float64)
    tol = TOLERANCE[dtype]

    masses = beliefs_to_masses(b)
    assert masses.dtype == dtype
    assert masses.shape == (*leading, 15)
    check_masses(masses)  # valid in its own dtype
    expected_masses = beliefs_to_masses(reference)
    torch.testing.assert_close(masses.double(), expected_masses, atol=tol, rtol=0)

    width = closed_form_width(b)
    assert width.dtype == dtype
    assert width.shape == (*leading, 4)
    torch.testing.assert_close(width.double(), closed_form_width(reference), atol=tol, rtol=0)

    stats = correction_stats(b)
    assert stats.intermediate.shape == stats.q.shape == (*leading, 14)
    for field in (stats.s, stats.r, stats.rescaled, stats.n_negative, stats.total_adjustment):
        assert field.shape == leading
    assert stats.s.dtype == stats.total_adjustment.dtype == dtype
    assert torch.equal(stats.n_negative, correction_stats(reference).n_negative)


@pytest.mark.parametrize("leading", LEADING)
@pytest.mark.parametrize("dtype", DTYPES)
def test_measures_shapes_dtypes_and_values(dtype: torch.dtype, leading: tuple[int, ...]) -> None:
    masses = beliefs_to_masses(beliefs_in(torch.float64, leading)).to(dtype)
    reference = masses.to(torch.float64)  # rounded: sums to 1 only within the dtype's tolerance
    tol = TOLERANCE[dtype]
    for measure in (belief, plausibility, credal_width, pignistic):
        value = measure(masses)
        assert value.dtype == dtype
        assert value.shape == (*leading, 4)
        torch.testing.assert_close(value.double(), measure(reference, validate=False), atol=tol, rtol=0)
    for event_measure in (belief_of, plausibility_of):
        value = event_measure(masses, (0, 2))
        assert value.dtype == dtype
        assert value.shape == leading
        expected = event_measure(reference, (0, 2), validate=False)
        torch.testing.assert_close(value.double(), expected, atol=tol, rtol=0)

    logits = torch.log(reference + 1e-3).to(dtype)
    softmax = masses_from_set_logits(logits)
    assert softmax.dtype == dtype
    assert softmax.shape == (*leading, 15)
    torch.testing.assert_close(softmax.double(), torch.softmax(logits.double(), dim=-1), atol=tol, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_reach_inputs_in_their_dtype(dtype: torch.dtype) -> None:
    b = beliefs_in(dtype, (2, 5)).requires_grad_(True)
    credal_width(beliefs_to_masses(b))[..., 1].sum().backward()
    assert b.grad is not None
    assert b.grad.dtype == dtype
    assert torch.isfinite(b.grad).all()
    reference = b.detach().double().requires_grad_(True)
    credal_width(beliefs_to_masses(reference))[..., 1].sum().backward()
    assert reference.grad is not None
    torch.testing.assert_close(b.grad.double(), reference.grad, atol=50 * TOLERANCE[dtype], rtol=0)
