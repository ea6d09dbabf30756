"""Degraded copies of cue readings (evaluation/degraded.py) and the known-ranking test between a reading and
its copy: what each degradation exchanges (checked against the readings it came from), that it is
deterministic and leaves its input unchanged, that shuffling a cue's tokens is invisible to the reading (and
moving a token across cues is not), and the paired test against scipy's binomial test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from xurs_pipeline.evaluation.degraded import (
    degraded,
    degraded_name,
    is_degraded,
    known_ranking,
    ranked_below,
    seeded_half,
    unranked,
)
from xurs_pipeline.evaluation.swap.readings import COLUMNS, token_reading

CUES = ([1, 2, 3], [5, 6])


def measured(probes: int = 9) -> pd.DataFrame:
    """Two methods' token readings under models A and B: random magnitudes on 8 tokens, a tie on probe 0."""
    rng = np.random.default_rng(3)
    rows = []
    for method in ("m", "other"):
        for run in ("A", "B"):
            for i in range(probes):
                magnitude = np.zeros(8) if i == 0 else rng.random(8)
                rows.append(token_reading(magnitude, CUES, 5, 2).row(method, run, f"p{i}"))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def test_swapped_exchanges_the_cues_on_every_probe_and_rereads_top_and_share() -> None:
    before = measured()
    kept = before.copy(deep=True)
    out = degraded(before, ["swapped"], seed=0)
    pd.testing.assert_frame_equal(before, kept)  # the input is left unchanged
    assert out["method"].tolist() == [degraded_name(m, "swapped") for m in before["method"]]
    for a, b in (("best_1", "best_2"), ("total_1", "total_2")):
        assert out[a].tolist() == before[b].tolist()
        assert out[b].tolist() == before[a].tolist()
    assert out["top"].tolist() == [{1: 2, 2: 1, 0: 0}[t] for t in before["top"]]  # a tie stays a tie
    decided = before["share_1"].notna()
    assert not decided.all()  # probe 0: no magnitude, no share
    np.testing.assert_allclose(out.loc[decided, "share_1"], 1.0 - before.loc[decided, "share_1"])
    assert out.loc[~decided, "share_1"].isna().all()
    assert out[["run", "role", "record_id", "evals", "grad_evals"]].equals(
        before[["run", "role", "record_id", "evals", "grad_evals"]]
    )


def test_half_swapped_exchanges_half_of_each_methods_probes_under_each_model_deterministically() -> None:
    before = measured()
    out = degraded(before, ["half_swapped"], seed=0)
    changed = out["total_1"].to_numpy() != before["total_1"].to_numpy()
    assert not changed[before["record_id"] == "p0"].any()  # a probe with no magnitude looks the same
    chosen = seeded_half(before, 0)
    assert (changed == (chosen & (before["record_id"] != "p0")).to_numpy()).all()
    assert before.assign(chosen=chosen).groupby(["method", "run"])["chosen"].sum().eq(9 // 2).all()
    assert out.equals(degraded(before, ["half_swapped"], seed=0))  # deterministic
    shuffled = before.sample(frac=1.0, random_state=1)
    assert (seeded_half(shuffled, 0) == chosen[shuffled.index]).all()  # the rows' order does not matter
    assert (seeded_half(before, 1) != chosen).any()  # another seed, another half


def test_both_degradations_come_one_after_the_other_and_names_are_checked() -> None:
    before = measured()
    out = degraded(before, ["swapped", "half_swapped"], seed=0)
    assert len(out) == 2 * len(before)
    assert list(out.columns) == list(COLUMNS)
    assert is_degraded(out["method"]).all()
    assert not is_degraded(before["method"]).any()
    with pytest.raises(ValueError, match="unknown degradations"):
        degraded(before, ["shuffled"], seed=0)
    with pytest.raises(ValueError, match="already a degraded copy"):
        degraded(out, ["swapped"], seed=0)


def test_shuffling_a_cues_tokens_leaves_the_reading_unchanged_and_moving_one_across_cues_does_not() -> None:
    """Why a within-cue shuffle is no degradation: a cue's summed magnitude (the plan's cue score) and its
    best token are the same under any permutation of its tokens, so no yardstick can tell the two apart."""
    magnitude = np.array([0.1, 0.9, 0.2, 0.4, 0.3, 0.5, 0.35, 0.05])
    first = token_reading(magnitude, CUES)
    rng = np.random.default_rng(0)
    for _ in range(5):
        shuffled = magnitude.copy()
        for cue in CUES:
            shuffled[cue] = rng.permutation(magnitude[cue])
        assert token_reading(shuffled, CUES) == first
    across = magnitude.copy()
    across[[1, 5]] = magnitude[[5, 1]]  # cue 1's best token exchanged with one of cue 2's
    assert token_reading(across, CUES).total != first.total


def test_the_known_ranking_test_is_the_one_sided_exact_mcnemar_test() -> None:
    right = np.array([True] * 10 + [False] * 2)
    worse = np.array([False] * 6 + [True] * 4 + [False, True])  # 6 only the reading, 1 only the copy
    got = ranked_below(right, worse, ["s"] * 12, alpha=0.05)
    p = stats.binomtest(6, 7, 0.5, alternative="greater").pvalue
    assert got == {"k": 10, "k_degraded": 5, "n": 12, "p": pytest.approx(p), "ranks": p <= 0.05}
    assert not ranked_below(right, right, ["s"] * 12, alpha=0.05)["ranks"]  # as often: not ranked below


def test_known_ranking_reads_each_copy_on_the_units_both_are_known() -> None:
    units = pd.MultiIndex.from_tuples([("s1", f"p{i}") for i in range(8)], names=["study", "record_id"])
    outcomes = pd.DataFrame(
        {"m": [True] * 8, degraded_name("m", "swapped"): [False] * 7 + [np.nan]}, index=units
    )
    ranking = known_ranking(outcomes, ["m"], ["swapped", "half_swapped"], lambda f: f["study"], 0.05)
    assert ranking["m"]["swapped"] == {"k": 7, "k_degraded": 0, "n": 7, "p": 0.5**7, "ranks": True}
    assert ranking["m"]["half_swapped"] == {"k": 0, "k_degraded": 0, "n": 0, "p": 1.0, "ranks": False}
    assert unranked(ranking) == ["m~half_swapped 0/0 against 0/0 (p 1)"]  # a missing copy ranks nothing
