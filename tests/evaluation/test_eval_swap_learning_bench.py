"""``bench/swap_learning.py``'s reading of the probes' dependence: which pairs are clear (the study's margin
rule, the bound included), which cue each clear pair depends on, by cue order, and as-trained counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from bench_scripts import load_bench_script

from xurs_pipeline.evaluation.swap.behaviour import cue_dependence


@pytest.fixture(scope="module")
def bench():
    return load_bench_script("swap_learning")


def _probes() -> pd.DataFrame:
    """Five probes' cue effects: clearly cue 1, clearly cue 2, at the margin 0.2 exactly (cue 2), just
    under it (cue 1), a tie."""
    effects = pd.DataFrame(
        {
            "record_id": [f"p{i}" for i in range(5)],
            "effect_1": [0.5, 0.1, 0.25, 0.595, 0.3],
            "effect_2": [0.0, 0.6, 0.375, 0.405, 0.3],
            "order": [1, 2, 1, 2, 2],
        }
    )
    return cue_dependence(effects, "A").drop(columns=["role"])


def test_clear_pairs_and_their_cues(bench) -> None:
    summary = bench.dependence_summary(_probes(), 0.2)
    assert (summary["probes"], summary["clear"]) == (5, 3)  # margins 1, 5/7, 0.2; not 0.19 nor the tie
    assert (summary["clear_on_cue1"], summary["clear_on_cue2"]) == (1, 2)
    assert (summary["on_cue1"], summary["on_cue2"]) == (2, 2)  # the tie depends on neither
    assert summary["clear_order1"] == {"cue1": 1, "cue2": 1}
    assert summary["clear_order2"] == {"cue1": 0, "cue2": 1}
    assert summary["margin_quantiles"]["0.5"] == pytest.approx(0.2)
    stricter = bench.dependence_summary(_probes(), 0.3)
    assert (stricter["clear"], stricter["clear_on_cue2"]) == (2, 1)  # the bound probe drops out
    assert bench.dependence_summary(_probes(), 0.0)["clear"] == 4  # a tie is never clear


def test_as_trained_counts_the_trained_cue_by_order(bench) -> None:
    probes = _probes()
    assert bench.as_trained_by_order(probes, 1) == {"pooled": "2/5", "order1": "1/2", "order2": "1/3"}
    assert bench.as_trained_by_order(probes, 2) == {"pooled": "2/5", "order1": "1/2", "order2": "1/3"}


def test_accuracy_where_the_cues_agree_and_which_cue_wins_a_conflict(bench) -> None:
    """Two agreeing records (one right), two conflicts with both cues resolved (one follows each cue), and a
    disagreement that only one cue resolves (no conflict): counted apart."""
    answers = [[0, 0], [1, 1], [2, 3], [0, 1], [2, 1]]
    resolved = [[True, False], [True, True], [True, True], [True, True], [False, True]]
    found = bench.agreement_accuracy(np.array([0, 2, 3, 0, 1]), answers, resolved)
    assert (found["n_agreeing"], found["n_conflicting"]) == (2, 2)
    assert found["accuracy_agreeing"] == 0.5
    assert (found["conflicting_follow_cue1"], found["conflicting_follow_cue2"]) == (0.5, 0.5)
    cue1 = bench.agreement_accuracy(np.array([0, 1, 2, 0, 2]), answers, resolved)
    assert (cue1["accuracy_agreeing"], cue1["conflicting_follow_cue1"], cue1["conflicting_follow_cue2"]) == (
        1.0,
        1.0,
        0.0,
    )
