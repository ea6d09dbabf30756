"""The tolerance on |Σ m - 1| follows the dtype that computed the masses (``mass_sum_tolerance``, from
``torch.finfo(dtype).eps``): bfloat16 and float16 masses pass within their rounding and fail beyond it;
float32 keeps 1e-5; float32 tensors computed under bfloat16 autocast are checked at bfloat16's tolerance."""

from __future__ import annotations

import pytest
import torch

from xurs_pipeline.credal import N_MASSES, check_masses, coarsest, mass_sum_tolerance
from xurs_pipeline.credal.precision import MASS_SUM_ULPS


def _normalised(n: int, seed: int = 0) -> torch.Tensor:
    """(n, 15) float64 masses that sum to 1 exactly up to float64 rounding."""
    g = torch.Generator().manual_seed(seed)
    raw = torch.rand(n, N_MASSES, generator=g, dtype=torch.float64)
    return raw / raw.sum(-1, keepdim=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_masses_pass_within_their_rounding(dtype: torch.dtype) -> None:
    masses = _normalised(256).to(dtype)  # each mass rounded: sums move by up to eps / 2
    off = (masses.double().sum(-1) - 1).abs().max().item()
    assert off > 1e-5  # float32's tolerance would reject these
    assert off <= mass_sum_tolerance(dtype)
    check_masses(masses)
    check_masses(masses.float(), computed_in=dtype)  # as accelerate returns autocast outputs
    with pytest.raises(ValueError, match=r"\|sum - 1\| > 1e-05"):
        check_masses(masses.float())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_masses_off_by_much_more_than_eps_fail(dtype: torch.dtype) -> None:
    eps = torch.finfo(dtype).eps
    masses = _normalised(4) * (1 + 4 * MASS_SUM_ULPS * eps)  # 4x beyond the tolerance
    with pytest.raises(ValueError, match="sums to"):
        check_masses(masses.to(dtype))
    with pytest.raises(ValueError, match="sums to"):
        check_masses(masses.float(), computed_in=dtype)


def test_float32_keeps_1e5_and_derived_values() -> None:
    assert mass_sum_tolerance(torch.float32) == 1e-5
    assert mass_sum_tolerance(torch.float64) == 1e-5  # float64 masses are usually widened float32 results
    assert mass_sum_tolerance(torch.bfloat16) == MASS_SUM_ULPS * 2.0**-7
    assert mass_sum_tolerance(torch.float16) == MASS_SUM_ULPS * 2.0**-10
    base = _normalised(3).float()
    check_masses(base * (1 + 5e-6))
    with pytest.raises(ValueError, match=r"\|sum - 1\| > 1e-05"):
        check_masses(base * (1 + 3e-5))


def test_coarsest_picks_the_largest_epsilon() -> None:
    assert coarsest(torch.float32, torch.bfloat16) is torch.bfloat16
    assert coarsest(torch.float16, torch.bfloat16) is torch.bfloat16
    assert coarsest(torch.float32, None) is torch.float32
    with pytest.raises(ValueError, match="at least one dtype"):
        coarsest(None)
