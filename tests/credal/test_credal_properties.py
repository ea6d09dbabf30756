"""Property-based invariants (hypothesis): valid masses, Bel ≤ BetP ≤ Pl, width = Pl - Bel ∈ [0, 1],
event measures equal brute-force sums, duality Pl(E) = 1 - Bel(Θ \\ E), Eq. 6 equals Eq. 2."""

from __future__ import annotations

import torch
from credal_cases import bel_of_masses, beliefs_of_masses, pl_of_masses
from hypothesis import given, settings
from hypothesis import strategies as st

from xurs_pipeline.credal import (
    belief,
    belief_of,
    beliefs_to_masses,
    closed_form_width,
    credal_width,
    pignistic,
    plausibility,
    plausibility_of,
)

SETTINGS = settings(max_examples=150, deadline=None, database=None)  # no .hypothesis/ files
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
beliefs = st.lists(unit, min_size=14, max_size=14).map(lambda v: torch.tensor(v, dtype=torch.float64))
conversions = st.sampled_from(["positive_part", "mobius"])
events = st.sets(st.integers(min_value=0, max_value=3)).map(lambda e: tuple(sorted(e)))


@st.composite
def mass_vectors(draw: st.DrawFn) -> torch.Tensor:
    raw = draw(st.lists(unit, min_size=15, max_size=15).filter(lambda v: sum(v) > 1e-3))
    m = torch.tensor(raw, dtype=torch.float64)
    return m / m.sum()


@SETTINGS
@given(b=beliefs, conversion=conversions)
def test_converted_masses_are_valid(b: torch.Tensor, conversion: str) -> None:
    for dtype in (torch.float64, torch.float32):
        m = beliefs_to_masses(b.to(dtype), conversion)
        assert bool((m >= 0).all())
        assert abs(m.double().sum().item() - 1) <= 1e-6


@SETTINGS
@given(b=beliefs, conversion=conversions)
def test_interval_ordering_and_width(b: torch.Tensor, conversion: str) -> None:
    m = beliefs_to_masses(b, conversion)
    bel, pl, betp, width = belief(m), plausibility(m), pignistic(m), credal_width(m)
    assert bool((bel <= betp + 1e-12).all())
    assert bool((betp <= pl + 1e-12).all())
    torch.testing.assert_close(width, pl - bel, atol=1e-12, rtol=0)
    assert bool(((width >= 0) & (width <= 1 + 1e-12)).all())
    torch.testing.assert_close(closed_form_width(b, conversion), width, atol=1e-12, rtol=0)  # Eq. 6 == Eq. 2


@SETTINGS
@given(m=mass_vectors(), event=events)
def test_event_measures_match_brute_force_and_duality(m: torch.Tensor, event: tuple[int, ...]) -> None:
    rows = m.tolist()
    assert abs(belief_of(m, event).item() - bel_of_masses(rows, event)) <= 1e-12
    assert abs(plausibility_of(m, event).item() - pl_of_masses(rows, event)) <= 1e-12
    complement = tuple(c for c in range(4) if c not in event)
    assert abs(plausibility_of(m, event).item() - (1 - belief_of(m, complement).item())) <= 1e-12
    assert belief_of(m, event).item() <= plausibility_of(m, event).item() + 1e-12


@SETTINGS
@given(m=mass_vectors())
def test_singleton_measures_are_the_event_measures(m: torch.Tensor) -> None:
    for c in range(4):
        assert abs(belief(m)[c].item() - belief_of(m, (c,)).item()) <= 1e-15
        assert abs(plausibility(m)[c].item() - plausibility_of(m, (c,)).item()) <= 1e-12


@SETTINGS
@given(m=mass_vectors())
def test_mobius_inverts_beliefs_of_any_mass_vector(m: torch.Tensor) -> None:
    torch.testing.assert_close(beliefs_to_masses(beliefs_of_masses(m), "mobius"), m, atol=1e-12, rtol=0)
