"""Conversion (App. A), correction (Eq. 5), closed form (Eq. 6) and statistics (Sec. 5.3) against loops."""

from __future__ import annotations

import pytest
import torch
from credal_cases import (
    beliefs_of_masses,
    loop_correction,
    loop_recursion,
    mixed_beliefs,
    random_masses,
)
from scipy.special import softmax

from xurs_pipeline.credal import (
    FOCAL_INDEX,
    FOCAL_SETS,
    beliefs_to_masses,
    closed_form_width,
    correction_stats,
    credal_width,
    intermediate_values,
    masses_from_set_logits,
)

CONVERSIONS = ("positive_part", "mobius")


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_vectorised_conversion_matches_loop_reference(conversion: str, generator: torch.Generator) -> None:
    b = mixed_beliefs(64, generator)
    intermediate = intermediate_values(b, conversion)
    masses = beliefs_to_masses(b, conversion)
    for row in range(b.shape[0]):
        expected = loop_recursion(b[row].tolist(), positive_part=conversion == "positive_part")
        torch.testing.assert_close(intermediate[row], torch.tensor(expected, dtype=torch.float64))
        torch.testing.assert_close(masses[row], torch.tensor(loop_correction(expected), dtype=torch.float64))


def test_mobius_recovers_masses_of_valid_beliefs(generator: torch.Generator) -> None:
    masses = random_masses(128, generator)
    b = beliefs_of_masses(masses)
    torch.testing.assert_close(beliefs_to_masses(b, "mobius"), masses, atol=1e-12, rtol=0)
    torch.testing.assert_close(intermediate_values(b, "mobius"), masses[:, :14], atol=1e-12, rtol=0)


def test_conversions_agree_without_negative_intermediate_values(generator: torch.Generator) -> None:
    b = beliefs_of_masses(random_masses(128, generator))
    stats = correction_stats(b, "positive_part")
    assert int(stats.n_negative.max()) == 0
    torch.testing.assert_close(beliefs_to_masses(b, "positive_part"), beliefs_to_masses(b, "mobius"))


def test_conversions_differ_when_an_intermediate_value_is_negative() -> None:
    b = torch.zeros(14, dtype=torch.float64)
    for subset, value in {
        (0,): 0.5, (1,): 0.5, (2,): 0.1,
        (0, 1): 0.3,  # m~ = 0.3 - 0.5 - 0.5 = -0.7 under both conversions
        (0, 2): 0.6, (1, 2): 0.6,  # m~ = 0 under both
        (0, 1, 2): 0.9,
    }.items():  # fmt: skip
        b[FOCAL_INDEX[subset]] = value
    abc, ab = FOCAL_INDEX[(0, 1, 2)], FOCAL_INDEX[(0, 1)]
    positive = intermediate_values(b, "positive_part")
    mobius = intermediate_values(b, "mobius")
    assert positive[ab].item() == pytest.approx(-0.7)
    assert mobius[ab].item() == pytest.approx(-0.7)
    # positive part: 0.9 - (0.5 + 0.5 + 0.1); Moebius also adds back the signed -0.7 of {A, B}
    assert positive[abc].item() == pytest.approx(-0.2)
    assert mobius[abc].item() == pytest.approx(0.5)
    assert beliefs_to_masses(b, "positive_part")[abc].item() == 0.0
    assert beliefs_to_masses(b, "mobius")[abc].item() > 0.1


@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_closed_form_width_equals_direct_sum_in_both_regimes(
    conversion: str, generator: torch.Generator
) -> None:
    b = mixed_beliefs(512, generator)
    stats = correction_stats(b, conversion)
    assert int(stats.rescaled.sum()) > 50, "the s > 1 regime must be exercised"
    assert int((stats.s < 1).sum()) > 50, "the s < 1 regime must be exercised"
    direct = credal_width(beliefs_to_masses(b, conversion))  # Eq. 2
    torch.testing.assert_close(closed_form_width(b, conversion), direct, atol=1e-12, rtol=0)  # Eq. 6
    # the two branches of Eq. 6, with u_c summed over the proper non-singleton sets holding c
    u = torch.stack(
        [
            sum(stats.q[:, i] for i, subset in enumerate(FOCAL_SETS[:14]) if c in subset and len(subset) > 1)
            for c in range(4)
        ],
        dim=-1,
    )
    s = stats.s.unsqueeze(-1)
    torch.testing.assert_close(direct[stats.s <= 1], (u + 1 - s)[stats.s <= 1])
    torch.testing.assert_close(direct[stats.s > 1], (u / s)[stats.s > 1])


def test_correction_stats_match_loop_reference(generator: torch.Generator) -> None:
    b = mixed_beliefs(64, generator)
    stats = correction_stats(b)
    for row in range(b.shape[0]):
        intermediate = loop_recursion(b[row].tolist())
        masses = loop_correction(intermediate)
        s = sum(max(v, 0.0) for v in intermediate)
        assert stats.s[row].item() == pytest.approx(s, abs=1e-12)
        assert stats.r[row].item() == pytest.approx(max(1 - s, 0.0), abs=1e-12)
        assert int(stats.n_negative[row]) == sum(v < 0 for v in intermediate)
        assert bool(stats.rescaled[row]) == (s > 1 + 1e-6)
        adjustment = sum(abs(m - v) for m, v in zip(masses, [*intermediate, 0.0], strict=True))
        assert stats.total_adjustment[row].item() == pytest.approx(adjustment, abs=1e-12)
    torch.testing.assert_close(stats.masses, beliefs_to_masses(b))
    assert stats.rescaled.dtype == torch.bool
    assert stats.n_negative.dtype == torch.int64


def test_rescaled_flag_uses_the_sec53_threshold() -> None:
    b = torch.zeros(2, 14, dtype=torch.float64)
    b[:, 0] = 0.5
    b[0, 1] = 0.5 + 5e-7  # s = 1 + 5e-7: not counted as rescaled
    b[1, 1] = 0.5 + 2e-6  # s = 1 + 2e-6: rescaled
    stats = correction_stats(b)
    assert stats.rescaled.tolist() == [False, True]
    assert stats.r.tolist() == [0.0, 0.0]


def test_set_logits_softmax_matches_scipy(generator: torch.Generator) -> None:
    logits = 3 * torch.randn(4, 7, 15, generator=generator, dtype=torch.float64)
    masses = masses_from_set_logits(logits)
    torch.testing.assert_close(masses, torch.from_numpy(softmax(logits.numpy(), axis=-1)))
    torch.testing.assert_close(masses.sum(-1), torch.ones(4, 7, dtype=torch.float64))
