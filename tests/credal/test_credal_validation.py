"""Bad inputs raise ValueError naming the shape or the first offending position and value; nothing is
clamped; ``validate=False`` skips only the value scan."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch

from xurs_pipeline.credal import (
    belief,
    belief_of,
    beliefs_to_masses,
    check_masses,
    closed_form_width,
    correction_stats,
    credal_width,
    intermediate_values,
    masses_from_set_logits,
    pignistic,
    plausibility,
    plausibility_of,
)

BELIEF_FUNCTIONS: list[Callable[..., object]] = [
    beliefs_to_masses,
    correction_stats,
    closed_form_width,
    intermediate_values,
]
MASS_FUNCTIONS: list[Callable[..., object]] = [
    belief,
    plausibility,
    credal_width,
    pignistic,
    check_masses,
    lambda m, **kw: belief_of(m, (0, 1), **kw),
    lambda m, **kw: plausibility_of(m, (2,), **kw),
]


def valid_masses(*leading: int) -> torch.Tensor:
    return torch.full((*leading, 15), 1 / 15, dtype=torch.float64)


@pytest.mark.parametrize("fn", BELIEF_FUNCTIONS)
@pytest.mark.parametrize("shape", [(3, 15), (13,), (), (2, 0)])
def test_belief_shape_errors_name_the_shape(fn: Callable[..., object], shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=re.escape(f"got shape {shape}")):
        fn(torch.zeros(shape))
    with pytest.raises(ValueError, match=re.escape(f"got shape {shape}")):
        fn(torch.zeros(shape), validate=False)  # shape checks never skip


@pytest.mark.parametrize("fn", MASS_FUNCTIONS)
@pytest.mark.parametrize("shape", [(2, 14), (16,), ()])
def test_mass_shape_errors_name_the_shape(fn: Callable[..., object], shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=re.escape("(..., 15)")):
        fn(torch.zeros(shape))
    with pytest.raises(ValueError, match=re.escape(f"got shape {shape}")):
        fn(torch.zeros(shape), validate=False)


@pytest.mark.parametrize("fn", BELIEF_FUNCTIONS)
@pytest.mark.parametrize(
    ("value", "shown"), [(float("nan"), "nan"), (1.5, "1.5"), (-0.25, "-0.25"), (float("inf"), "inf")]
)
def test_belief_value_errors_name_the_first_position(
    fn: Callable[..., object], value: float, shown: str
) -> None:
    b = torch.full((2, 3, 14), 0.1)
    b[1, 2, 7] = value
    b[1, 2, 9] = value  # a later bad entry: the first one is reported
    with pytest.raises(ValueError, match=re.escape(f"beliefs[1, 2, 7] = {shown}") + r".*\(1, 2\)"):
        fn(b)


@pytest.mark.parametrize("fn", MASS_FUNCTIONS)
def test_mass_value_errors_name_the_first_position(fn: Callable[..., object]) -> None:
    m = valid_masses(4)
    m[2, 14] = float("nan")
    with pytest.raises(ValueError, match=re.escape("masses[2, 14] = nan (focal set (0, 1, 2, 3))")):
        fn(m)
    m = valid_masses(4)
    m[3, 0] = -0.5
    with pytest.raises(ValueError, match=re.escape("masses[3, 0] = -0.5")):
        fn(m)


@pytest.mark.parametrize("fn", MASS_FUNCTIONS)
def test_unnormalised_masses_name_the_row_and_sum(fn: Callable[..., object]) -> None:
    m = valid_masses(2, 3)
    m[1, 1, 4] += 0.2
    with pytest.raises(ValueError, match=re.escape("masses[1, 1, :] sums to 1.2")):
        fn(m)
    with pytest.raises(ValueError, match=re.escape("masses[:] sums to 0.5")):
        fn(valid_masses() / 2)


def test_validate_false_skips_only_the_value_scan_and_nothing_is_clamped() -> None:
    b = torch.full((14,), 0.1)
    b[0] = 1.5
    masses = beliefs_to_masses(b, validate=False)  # trusted caller: no scan, no clamping of b
    assert correction_stats(b, validate=False).intermediate[0].item() == 1.5
    assert masses.sum().item() == pytest.approx(1.0)
    assert credal_width(valid_masses() * 2, validate=False)[0].item() == pytest.approx(2 * 7 / 15)


def test_unknown_conversion_lists_the_allowed_names() -> None:
    with pytest.raises(
        ValueError, match=r"conversion='moebius' is unknown; allowed: 'positive_part', 'mobius'"
    ):
        beliefs_to_masses(torch.zeros(14), "moebius")


def test_set_logits_must_be_finite() -> None:
    logits = torch.zeros(3, 15)
    logits[2, 5] = float("inf")
    with pytest.raises(ValueError, match=re.escape("logits[2, 5] = inf (focal set (0, 2)) is not finite")):
        masses_from_set_logits(logits)
    with pytest.raises(ValueError, match=re.escape("got shape (3, 14)")):
        masses_from_set_logits(torch.zeros(3, 14))


@pytest.mark.parametrize("event", [(4,), (-1,), (0, 0), ("a",), (1.0,), (True,), "01", 3])
@pytest.mark.parametrize("fn", [belief_of, plausibility_of])
def test_bad_events_are_rejected(fn: Callable[..., object], event: object) -> None:
    with pytest.raises(ValueError, match=r"allowed: distinct integer option indices in 0\.\.3|event must be"):
        fn(valid_masses(), event)


def test_events_in_any_order_or_container_are_accepted() -> None:
    m = torch.arange(1, 16, dtype=torch.float64) / 120
    assert belief_of(m, [2, 0]).item() == belief_of(m, (0, 2)).item() == pytest.approx((1 + 3 + 6) / 120)
    assert plausibility_of(m, frozenset({3})).item() == plausibility_of(m, (3,)).item()
    assert belief_of(m, ()).item() == 0.0


def test_dtype_and_type_errors() -> None:
    with pytest.raises(ValueError, match=r"dtype torch.int64; allowed dtypes: torch.float16"):
        beliefs_to_masses(torch.zeros(14, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"must be a torch\.Tensor, got list"):
        credal_width([0.0] * 15)  # type: ignore[arg-type]
