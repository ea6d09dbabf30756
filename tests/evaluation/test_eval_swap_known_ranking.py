"""The known-ranking check of the analysis plan (evaluation/swap/faithfulness.py, docs/swap-plan.md): an edit
yardstick judges only where the degraded copies (``plan.DEGRADATIONS``) of every method it credits agree
with it on its clear probes significantly less often than the method, on hand ledgers (``swap_ledgers.py``)
rebuilt through ``faithfulness.scored`` with the copies a study adds (``faithfulness.with_degraded``):

- a reading that follows behaviour is credited, its swapped and half-swapped copies rank below it (counts
  known: the swapped copy is never right, the half-swapped one on the half it leaves), and the yardstick
  judges;
- it must fail: a ledger whose half-swapped copy agrees as often as the method, or a ledger without the
  copies (nothing tells them apart), leaves the yardstick not judging and every method ``no verdict``,
  the reason named;
- vacuous: where the yardstick credits no method there is nothing to rank, and it still judges.
"""

from __future__ import annotations

import pandas as pd
from swap_ledgers import NO_PLANTED, PROBES, READERS, SEEDS, ledger, through_scored

from xurs_pipeline.evaluation.degraded import degraded_name
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.faithfulness import faithfulness, validity
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS
from xurs_pipeline.reporting.swap_metrics import yardstick_metrics

PLANTED = {y: y == plan.JUDGE for y in YARDSTICKS}  # the hand ledger holds the text edits' rows alone
PAIRS = SEEDS * 2 * PROBES  # clear (model, probe) pairs of the hand ledger


def judge_of(rows: pd.DataFrame) -> tuple[dict, dict]:
    """(the judge's validity, the plan's result) on ``rows``."""
    yardsticks = validity(rows, PLANTED, learned=True, confidence=0.95)
    return yardsticks[plan.JUDGE], faithfulness(rows, yardsticks, NO_PLANTED, 0.95)


def test_a_reading_that_follows_behaviour_ranks_above_its_degraded_copies() -> None:
    rows = through_scored(ledger(), degrade=True)
    judge, result = judge_of(rows)
    assert list(judge["known_ranking"]) == ["follows"]  # "rule" and "always_1" miss the marks
    swapped, half = (judge["known_ranking"]["follows"][d] for d in plan.DEGRADATIONS)
    assert (swapped["k"], swapped["k_degraded"], swapped["n"]) == (PAIRS, 0, PAIRS)
    # half of each model's probes in each seed exchanged: right on the other half
    assert (half["k"], half["k_degraded"], half["n"]) == (PAIRS, PAIRS // 2, PAIRS)
    assert swapped["ranks"]
    assert half["ranks"]
    assert half["p"] == 0.5 ** (PAIRS // 2)
    assert judge["ranks_degraded"]
    assert judge["judges"]
    assert result["methods"]["follows"]["verdict"] == "passes"
    assert not any("~" in m for m in result["methods"])  # the copies are read by the check alone
    shown = yardstick_metrics(result)[plan.JUDGE]
    assert shown["known_ranking_p"]["follows"] == {
        d: c["p"] for d, c in judge["known_ranking"]["follows"].items()
    }


def test_a_degraded_copy_that_agrees_as_often_leaves_no_verdict() -> None:
    rows = through_scored(ledger(), degrade=True)
    copy, follows = degraded_name("follows", "half_swapped"), rows["method"] == "follows"
    indistinct = pd.concat([rows[rows["method"] != copy], rows[follows].assign(method=copy)])
    judge, result = judge_of(indistinct)
    assert not judge["known_ranking"]["follows"]["half_swapped"]["ranks"]
    assert judge["known_ranking"]["follows"]["swapped"]["ranks"]
    assert not judge["ranks_degraded"]
    assert not judge["judges"]
    for name in ("follows", "rule", "always_1"):
        assert result["methods"][name]["verdict"] == "no verdict"
    reason = result["methods"]["follows"]["reasons"][0]
    assert reason == (
        f"{plan.JUDGE} does not judge (planted True, models learned True, ranks degraded False; not ranked "
        f"below: {copy} {PAIRS}/{PAIRS} against {PAIRS}/{PAIRS} (p 1))"
    )


def test_a_ledger_without_the_degraded_copies_cannot_rank_them() -> None:
    judge, result = judge_of(through_scored(ledger()))
    assert {c["n"] for c in judge["known_ranking"]["follows"].values()} == {0}
    assert not judge["judges"]
    assert result["methods"]["follows"]["verdict"] == "no verdict"
    assert "not ranked below: follows~swapped 0/0" in result["methods"]["follows"]["reasons"][0]


def test_where_no_method_is_credited_the_check_is_vacuous_and_the_yardstick_judges() -> None:
    readers = {name: READERS[name] for name in ("rule", "always_1", *plan.LABEL_RANKERS)}
    judge, result = judge_of(through_scored(ledger(readers), degrade=True))
    assert judge["known_ranking"] == {}
    assert judge["ranks_degraded"]
    assert judge["judges"]
    assert result["methods"]["rule"]["verdict"] == "fails"  # judged: not blocked by the check
    few = through_scored(ledger(seeds=1, clear=lambda s, role, i: i < 3), degrade=True)
    judge, result = judge_of(few)  # 6 clear pairs: "follows" is right on all, too few to meet the marks
    assert judge["known_ranking"] == {}
    assert judge["judges"]
    assert not any("does not judge" in r for r in result["methods"]["follows"]["reasons"])
