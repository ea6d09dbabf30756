"""The worked examples of the paper (Sec. 1, Sec. 4, App. A) and the focal-set order."""

from __future__ import annotations

import pytest
import torch
from credal_cases import beliefs_for_targets

from xurs_pipeline.credal import (
    FOCAL_INDEX,
    FOCAL_SETS,
    belief,
    beliefs_to_masses,
    closed_form_width,
    correction_stats,
    credal_width,
    pignistic,
    plausibility,
)

A, B, C, D = 0, 1, 2, 3


def masses_of(assignment: dict[tuple[int, ...], float]) -> torch.Tensor:
    m = torch.zeros(15, dtype=torch.float64)
    for subset, value in assignment.items():
        m[FOCAL_INDEX[subset]] = value
    return m


def test_focal_set_order_is_the_documented_one() -> None:
    assert FOCAL_SETS == (
        (0,), (1,), (2,), (3,),
        (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3),
        (0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3),
        (0, 1, 2, 3),
    )  # fmt: skip


def test_sec1_example_interval_of_c() -> None:
    m = masses_of({(B,): 0.1, (C,): 0.1, (B, C): 0.8})
    assert belief(m)[C].item() == pytest.approx(0.1, abs=1e-12)
    assert plausibility(m)[C].item() == pytest.approx(0.9, abs=1e-12)
    assert credal_width(m)[C].item() == pytest.approx(0.8, abs=1e-12)
    # the same masses reached from beliefs through the conversion (s = 1, no correction needed)
    b = beliefs_for_targets({(B,): 0.1, (C,): 0.1, (B, C): 0.8})
    torch.testing.assert_close(beliefs_to_masses(b), m, atol=1e-12, rtol=0)


@pytest.mark.parametrize(("q_a", "expected_width"), [(0.6, 0.5), (0.9, 0.4)])
def test_sec4_example_rescaling_lowers_width_of_c(q_a: float, expected_width: float) -> None:
    b = beliefs_for_targets({(B, C): 0.6, (A,): q_a})
    stats = correction_stats(b)
    expected_q = torch.zeros(14, dtype=torch.float64)
    expected_q[FOCAL_INDEX[(B, C)]] = 0.6
    expected_q[FOCAL_INDEX[(A,)]] = q_a
    torch.testing.assert_close(stats.q, expected_q, atol=1e-12, rtol=0)
    assert stats.s.item() == pytest.approx(0.6 + q_a)
    assert stats.r.item() == 0.0
    assert bool(stats.rescaled)
    assert credal_width(beliefs_to_masses(b))[C].item() == pytest.approx(expected_width, abs=1e-12)
    assert closed_form_width(b)[C].item() == pytest.approx(expected_width, abs=1e-12)
    # the set holding C kept its pre-normalisation value, yet its final mass is 0.6 / s
    assert beliefs_to_masses(b)[FOCAL_INDEX[(B, C)]].item() == pytest.approx(0.6 / (0.6 + q_a))


def test_appendix_a_vacuous_and_uniform_share_betp_but_not_width() -> None:
    vacuous = masses_of({(A, B, C, D): 1.0})
    uniform = masses_of({(A,): 0.25, (B,): 0.25, (C,): 0.25, (D,): 0.25})
    quarter = torch.full((4,), 0.25, dtype=torch.float64)
    torch.testing.assert_close(pignistic(vacuous), quarter)
    torch.testing.assert_close(pignistic(uniform), quarter)
    torch.testing.assert_close(credal_width(vacuous), torch.ones(4, dtype=torch.float64))
    torch.testing.assert_close(credal_width(uniform), torch.zeros(4, dtype=torch.float64))
    # from beliefs: all-zero beliefs leave the whole shortfall r = 1 on Θ; Bel of the uniform masses
    torch.testing.assert_close(beliefs_to_masses(torch.zeros(14, dtype=torch.float64)), vacuous)
    uniform_beliefs = beliefs_for_targets({(c,): 0.25 for c in range(4)})
    torch.testing.assert_close(beliefs_to_masses(uniform_beliefs), uniform)
