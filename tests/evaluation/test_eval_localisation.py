"""Reference endpoint checks (Eq. 10, Table 3) and clue localisation (App. C, Table 9)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xurs_pipeline.evaluation.localisation import clue_localisation, control_windows, identical_positions
from xurs_pipeline.evaluation.references import endpoint_check


def test_endpoints_reproduce_table3_first_case_and_warn(caplog):
    # family007_case00: Delta_natural = -0.478592, Delta_aligned = +0.002640, shift 0.481233 (rounded inputs)
    w_with = 0.35
    with caplog.at_level(logging.INFO, logger="xurs.evaluation"):
        check = endpoint_check("family007_case00", w_with, w_with + 0.478592, w_with - 0.002640, 1.10e-5)
    assert check.delta_natural == pytest.approx(-0.478592)
    assert check.delta_aligned == pytest.approx(0.002640)
    assert check.shift == pytest.approx(0.481232, abs=2e-6)
    assert check.warning
    assert check.concerns == "prepared"  # the explanation concerns Delta_aligned, not Delta_natural
    assert "family007_case00" in caplog.text
    assert "reference_shift_warning" in caplog.text
    quiet = endpoint_check("same", 0.3, 0.5, 0.505, warn_above=0.01)
    assert quiet.shift == pytest.approx(0.005)
    assert not quiet.warning
    assert quiet.concerns == "natural"
    assert quiet.to_dict()["warning"] is False
    with pytest.raises(ValueError, match=r"'bad'.*w_aligned"):
        endpoint_check("bad", 0.3, 0.5, float("nan"))


def test_clue_localisation_hand_case():
    # region = positions 2..11 (10 tokens), clue = 5,6; magnitudes sum to 10 over the region
    mag = np.zeros(14)
    mag[2:12] = [1, 0.5, 0.5, 3, 1, 1, 1, 0.5, 0.5, 1]
    loc = clue_localisation(mag, range(2, 12), [5, 6], "case", forced_zero=[0, 3, 13])
    windows = [(2, 3), (3, 4), (7, 8), (8, 9), (9, 10), (10, 11)]
    shares = np.array([mag[list(w)].sum() for w in windows]) / 10
    assert loc.clue_share == pytest.approx(0.4)
    assert loc.n_windows == 6
    assert loc.control_mean_share == pytest.approx(shares.mean())
    assert loc.difference_pp == pytest.approx(100 * (0.4 - shares.mean()))
    assert loc.best_rank == 1  # position 5 has the largest magnitude
    assert loc.percentile == pytest.approx(100.0)  # above every window
    assert loc.forced_zero == (3,)  # only region positions are listed


def test_best_rank_and_percentile_when_the_clue_is_weak():
    mag = np.array([5.0, 4.0, 0.1, 0.2, 3.0, 2.0])
    loc = clue_localisation(mag, range(6), [2, 3], "all")
    assert loc.best_rank == 5  # ranks: 0,1,4,5,3 -> position 3 is fifth
    # windows (0,1)=9, (4,5)=5 ; clue 0.3 is below both
    assert loc.percentile == pytest.approx(0.0)
    assert loc.difference_pp == pytest.approx(100 * (0.3 - 7.0) / 14.3)


def test_identical_positions_are_those_no_reference_changes():
    x = np.arange(12.0).reshape(4, 3)
    refs = np.stack([x.copy(), x.copy()])
    refs[0, 1, 2] += 1.0
    refs[1, 3] = 0.0
    assert identical_positions(x, refs) == (0, 2)
    with pytest.raises(ValueError, match="n_refs"):
        identical_positions(x, refs[0])


def test_bad_regions_raise():
    mag = np.ones(6)
    with pytest.raises(ValueError, match=r"clue positions \[5\] are not in the region"):
        clue_localisation(mag, range(5), [4, 5], "case", record_id="r1")
    with pytest.raises(ValueError, match="no control window"):
        clue_localisation(mag, range(3), [0, 1], "tiny")
    with pytest.raises(ValueError, match="region positions"):
        clue_localisation(mag, range(4, 8), [4], "late")
    with pytest.raises(ValueError, match="positive total"):
        clue_localisation(np.zeros(6), range(6), [1], "zero")


@settings(max_examples=200, deadline=None)
@given(
    region=st.lists(st.integers(0, 60), min_size=1, max_size=40, unique=True).map(sorted),
    data=st.data(),
)
def test_control_windows_never_overlap_the_clue(region, data):
    clue = data.draw(st.lists(st.sampled_from(region), min_size=1, max_size=len(region), unique=True))
    windows = control_windows(region, clue)
    index = {p: i for i, p in enumerate(region)}
    for window in windows:
        assert set(window).isdisjoint(clue)
        assert len(window) == len(clue)
        assert [index[p] for p in window] == list(range(index[window[0]], index[window[0]] + len(clue)))
    # every clue-free run of the region is found
    expected = sum(
        1 for s in range(len(region) - len(clue) + 1) if set(region[s : s + len(clue)]).isdisjoint(clue)
    )
    assert len(windows) == expected


def test_localisation_over_live_positions_counts_only_them():
    """Planted: 12 positions, of which 6 can take attribution (2, 3, 4 clue; 7, 8, 10 not). Ranks, windows
    and shares are over those 6; a dead position with a large (spurious) magnitude cannot outrank the clue,
    and the chance that random scores put the clue first is 3 / 6."""
    mag = np.zeros(12)
    mag[[2, 3, 4, 7, 8, 10]] = [1.0, 2.0, 0.5, 3.0, 0.1, 0.4]
    mag[11] = 50.0  # dead position (identical to every reference): excluded
    live = [2, 3, 4, 7, 8, 10]
    loc = clue_localisation(mag, range(12), [1, 2, 3, 4], "case", live=live)  # clue 1 is dead
    assert (loc.n_live, loc.n_clue_live, loc.chance_rank_1) == (6, 3, 0.5)
    assert loc.best_rank == 2  # 7 (3.0) first, then clue 3 (2.0)
    assert loc.clue_share == pytest.approx(3.5 / 7.0)
    assert loc.n_windows == 1  # live run 7, 8, 10 is the one clue-free window of 3 live positions
    assert loc.control_mean_share == pytest.approx(3.5 / 7.0)
    everything = clue_localisation(mag, range(12), [1, 2, 3, 4], "case")
    assert everything.best_rank == 3  # counted over all positions the dead 11 outranks the clue


def test_a_clue_that_fills_the_live_positions_leaves_no_control_window():
    mag = np.array([0.0, 1.0, 2.0, 3.0, 0.5, 0.0])
    loc = clue_localisation(mag, range(6), [1, 2, 3], "case", live=[1, 2, 3, 4])
    assert loc.n_windows == 0
    assert np.isnan(loc.control_mean_share)
    assert np.isnan(loc.difference_pp)
    assert loc.best_rank == 1
    assert loc.chance_rank_1 == pytest.approx(0.75)
    with pytest.raises(ValueError, match="no clue position can take attribution"):
        clue_localisation(mag, range(6), [1, 2], "case", live=[3, 4])
