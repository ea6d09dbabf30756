"""The analysis plan's one pass rule (evaluation/swap/faithfulness.py, docs/swap-plan.md) on ledgers built by
hand (``swap_ledgers.py``), each rebuilt through ``faithfulness.scored`` and ``pooled.pooled_rows`` as a study
builds it: behaviour judges and the labels never do. Each rule has a case where it must fail:

- a method that follows behaviour where it departs from the labels passes; a reading that follows the
  training rule never does, even where it meets every cell's marks (departures rare);
- a reading identical to the constant ranker (always cue 1) fails on its comparison with the constant even
  where departures run mostly one way and it meets every cell; the constant is a baseline, never judged;
- a cell is judged on its clear probes only; every (model, cue order) cell must meet the marks, and a
  missing one (a fixed-order study) fails, as does a missing label-ranker comparison;
- a yardstick that fails its validation gives no verdict, with no fallback to another yardstick or the
  labels.
"""

from __future__ import annotations

import pandas as pd
from swap_ledgers import (
    NO_PLANTED,
    PROBES,
    READERS,
    SEEDS,
    behaviour,
    judged,
    ledger,
    own,
    through_scored,
)

from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.faithfulness import faithfulness, validity
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS

LEDGER_COLUMNS = ["method", "role", "record_id", "top", "depends_on", "agrees", "clear", "departs", "order"]


def rule_case(hand: pd.DataFrame) -> dict:
    """The plan's result on ``hand`` rebuilt through ``scored`` (which must give the hand ledger back)."""
    rows = through_scored(hand)
    key = ["method", "role", "record_id"]
    got, want = rows.sort_values(key).reset_index(drop=True), hand.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got[LEDGER_COLUMNS], want[LEDGER_COLUMNS], check_dtype=False)
    return judged(rows)


def test_a_method_following_behaviour_passes_where_the_labels_would_fail_it() -> None:
    result = rule_case(ledger())
    assert result["power"] == {
        "studies": SEEDS,
        "clear": SEEDS * 2 * PROBES,
        "departures": SEEDS * 12,
        "towards_cue_1": SEEDS * 6,
        "towards_cue_2": SEEDS * 6,
    }
    methods = result["methods"]
    assert (methods["follows"]["verdict"], methods["follows"]["reasons"]) == ("passes", [])
    # where the labels and the model part, the method sides with the model: the labels would fail it there
    wrong = methods["follows"][plan.JUDGE]["label_rankers_wrong"]
    assert wrong["training_rule"] == {"k": SEEDS * 12, "n": SEEDS * 12}
    assert methods["rule"]["verdict"] == "fails"
    assert {methods[b]["verdict"] for b in plan.LABEL_RANKERS} == {"baseline"}


RARE = 5  # probes 0-4 of each model depart: 3 state cue 1 first, 2 cue 2
MANY = 80  # probes per model and seed: every (model, order) cell of a reading that never departs passes


def test_a_reading_that_follows_the_training_rule_never_passes_when_behaviour_departs() -> None:
    rare = ledger(probes=MANY, dep=lambda s, role, i: 3 - own(role) if i < RARE else own(role))
    result = rule_case(rare)
    assert result["power"]["departures"] == SEEDS * 2 * RARE >= plan.MIN_DEPARTURES
    rule = result["methods"]["rule"]
    order_cells = {n: c for n, c in rule[plan.JUDGE]["cells"].items() if "_order" in n}
    assert len(order_cells) == 4
    assert all(c["meets_marks"] for c in order_cells.values())  # the cells alone would pass it
    assert rule["verdict"] == "fails"
    assert rule["reasons"] == [f"{plan.JUDGE}: not above training_rule (Holm p 1)"]
    assert rule[plan.JUDGE]["label_rankers_wrong"]["training_rule"] == {"k": 0, "n": SEEDS * 2 * RARE}
    assert result["methods"]["follows"]["verdict"] == "passes"


def one_way(s: int, role: str, i: int) -> int:
    """Both models depend on cue 2 on ``RARE`` probes, on cue 1 elsewhere: model A departs on those (towards
    cue 2), model B on all the others (towards cue 1)."""
    return 2 if i < RARE else 1


def test_the_constant_ranker_is_a_baseline_and_a_reading_like_it_fails_its_comparison() -> None:
    result = rule_case(ledger(probes=MANY, dep=one_way))
    size = result["power"]
    assert size["towards_cue_1"] == SEEDS * (MANY - RARE) > size["towards_cue_2"] == SEEDS * RARE
    methods = result["methods"]
    constant, always_1 = methods["constant"], methods["always_1"]
    # on the departures the constant looks good: right on every one towards cue 1, most of them
    assert constant[plan.JUDGE]["label_rankers_wrong"]["training_rule"] == {
        "k": SEEDS * (MANY - RARE),
        "n": SEEDS * MANY,
    }
    assert constant["verdict"] == "baseline"
    assert not any(t["method"] == "constant" for t in constant["comparisons"])  # never judged
    # a judged reading identical to it meets every cell and beats the training rule, yet fails
    assert all(c["meets_marks"] for c in always_1[plan.JUDGE]["cells"].values())
    tests = {t["against"]: t for t in always_1["comparisons"] if t["method"] == "always_1"}
    assert tests["training_rule"]["significant"]
    assert (tests["constant"]["only_first"], tests["constant"]["only_second"]) == (0, 0)
    assert always_1["verdict"] == "fails"
    assert always_1["reasons"] == [f"{plan.JUDGE}: not above constant (Holm p 1)"]
    # it never comes out ahead of the method that follows the model
    follows = {t["against"]: t for t in methods["follows"]["comparisons"] if t["method"] == "follows"}
    assert follows["constant"]["only_second"] == 0
    assert follows["constant"]["only_first"] == SEEDS * 2 * RARE
    assert methods["follows"]["verdict"] == "passes"


def test_a_cell_is_judged_on_its_clear_probes_only() -> None:
    unclear = {3, 5}  # model-independent: on these probes the dependence is not clear, and the method errs
    readers = {**READERS, "follows_where_clear": lambda s, role, i, dep: dep if i not in unclear else 3 - dep}
    result = rule_case(ledger(readers, clear=lambda s, role, i: i not in unclear))
    method = result["methods"]["follows_where_clear"]
    cell = method[plan.JUDGE]["cells"]["A_order2"]
    odd = PROBES // 2  # model A's probes that state cue 2 first, per seed
    assert (cell["clear_k"], cell["clear_n"]) == (SEEDS * (odd - 2), SEEDS * (odd - 2))
    assert (cell["agreement_k"], cell["agreement_n"]) == (SEEDS * (odd - 2), SEEDS * odd)
    assert cell["agreement"] < plan.AGREEMENT_PASS  # on every decided probe it would fail
    assert method["verdict"] == "passes"


def test_a_method_failing_one_model_and_order_cell_fails() -> None:
    def misses(s, role, i, dep):  # wrong on 2 of model B's 12 probes that state cue 2 first, in every seed
        return 3 - dep if role == "B" and i in (1, 3) else dep

    result = rule_case(ledger({**READERS, "misses_B_order2": misses}))
    method = result["methods"]["misses_B_order2"]
    cells = method[plan.JUDGE]["cells"]
    assert (cells["B_order2"]["clear_k"], cells["B_order2"]["clear_n"]) == (SEEDS * 10, SEEDS * 12)
    assert [n for n, c in cells.items() if not c["meets_marks"]] == ["B_order2"]  # pooled, B, order2 pass
    assert method["verdict"] == "fails"
    assert len(method["reasons"]) == 1
    assert method["reasons"][0].startswith(f"{plan.JUDGE}, B_order2: {SEEDS * 10}/{SEEDS * 12} (low ")


def test_a_fixed_order_study_lacks_half_the_cells_and_fails() -> None:
    """Every probe states cue 1 first: the order-2 cells are empty, so no method meets every cell."""
    result = rule_case(ledger().assign(order=1))
    method = result["methods"]["follows"]
    assert method["verdict"] == "fails"
    assert method["reasons"] == [f"{plan.JUDGE}, {m}_order2: no clear probe" for m in "AB"]
    assert method[plan.JUDGE]["cells"]["A_order1"]["meets_marks"]


def test_a_missing_label_ranker_comparison_fails_rather_than_passes() -> None:
    readers = {name: top for name, top in READERS.items() if name != "constant"}
    method = rule_case(ledger(readers))["methods"]["follows"]
    assert (method["verdict"], method["reasons"]) == (
        "fails",
        [f"{plan.JUDGE}: not above constant (no comparison)"],
    )


def test_a_yardstick_whose_validation_fails_gives_no_verdict() -> None:
    rows = through_scored(ledger(), degrade=True)
    others = pd.concat([rows.assign(yardstick=y) for y in YARDSTICKS])
    planted = {y: y != plan.JUDGE for y in YARDSTICKS}  # the text edits misread a planted text model
    yardsticks = validity(others, planted, learned=True, confidence=0.95)
    assert [y for y, v in yardsticks.items() if v["judges"]] == [y for y in YARDSTICKS if y != plan.JUDGE]
    # the other yardsticks validate, but none stands in for the judge, and neither do the labels
    result = faithfulness(others, yardsticks, NO_PLANTED, 0.95)
    for name in ("follows", "rule", "always_1"):
        assert result["methods"][name]["verdict"] == "no verdict"
        assert result["methods"][name]["reasons"][0].startswith(f"{plan.JUDGE} does not judge (planted False")
    assert {result["methods"][b]["verdict"] for b in plan.LABEL_RANKERS} == {"baseline"}
    none = judged(rows, judges=False)
    assert none["judges"] == []
    assert {m["verdict"] for n, m in none["methods"].items() if n not in plan.BASELINES} == {"no verdict"}


def test_departures_one_way_give_no_verdict() -> None:
    result = judged(ledger(dep=lambda s, role, i: behaviour(s, role, i) if role == "B" else 1))
    assert result["power"]["towards_cue_2"] == 0
    assert result["methods"]["follows"]["verdict"] == "no verdict"
    assert f"towards_cue_2 0 < {plan.MIN_EACH_WAY}" in result["methods"]["follows"]["reasons"]


def test_too_few_seeds_give_no_verdict() -> None:
    result = judged(ledger(seeds=plan.MIN_STUDIES - 1))
    assert result["methods"]["follows"]["verdict"] == "no verdict"
    assert f"studies {plan.MIN_STUDIES - 1} < {plan.MIN_STUDIES}" in result["methods"]["follows"]["reasons"]


def test_intervals_and_tests_take_the_seed_as_the_unit() -> None:
    result = judged(ledger())
    cell = result["methods"]["always_1"][plan.JUDGE]["cells"]["all"]
    assert cell["clear_deff"] >= 1.0
    tests = [t for t in result["methods"]["follows"]["comparisons"] if t["method"] == "follows"]
    assert {(t["strata"], t["ahead"], t["behind"]) for t in tests} == {(SEEDS, SEEDS, 0)}
    # every seed alike: Durkalski's statistic is sqrt(seeds), its ceiling
    assert {round(t["z_clustered"], 9) for t in tests} == {round(SEEDS**0.5, 9)}
    assert all(t["significant"] and t["p_holm"] >= t["p"] for t in tests)
