"""The swap study's verdict (evaluation/swap/faithfulness.py) by the analysis plan (plan.py): behaviour
judges, the labels never do. Two kinds of case:

- ledgers built by hand (seeds x probes x models, with departures from the training rule towards each cue),
  where every count and verdict is known, and each rule the plan states has a case where it must fail;
- the whole study on planted text models (model A reads cue 1 as trained; model B, trained on cue 2, reads
  cue 1 too), end to end through ``study_faithfulness``.
"""

from __future__ import annotations

import copy
import itertools

import pandas as pd
import pytest

from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.behaviour import cue_dependence, edit_widths
from xurs_pipeline.evaluation.swap.faithfulness import (
    FaithfulnessInputs,
    faithfulness,
    faithfulness_metrics,
    scored,
    study_faithfulness,
    validity,
)
from xurs_pipeline.evaluation.swap.planted_texts import PLANTED
from xurs_pipeline.evaluation.swap.pooled import pooled_faithfulness
from xurs_pipeline.evaluation.swap.readings import COLUMNS, CueReading
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS

SEEDS, PROBES = 6, 24  # 6 seeds x 24 probes x 2 models = 288 clear pairs
DEPARTS = {"A": range(0, 6), "B": range(6, 12)}  # probes where each model depends on the other cue


def behaviour(study: int, role: str, i: int) -> int:
    """The cue the model depends on: its own, except on ``DEPARTS`` (A towards cue 2, B towards cue 1)."""
    own = 1 if role == "A" else 2
    return 3 - own if i in DEPARTS[role] else own


READERS = {
    "follows": lambda s, role, i, dep: dep,  # reads the model
    "rule": lambda s, role, i, dep: 1 if role == "A" else 2,  # reads the labels
    "always_1": lambda s, role, i, dep: 1,
    "training_rule": lambda s, role, i, dep: 1 if role == "A" else 2,  # the baselines, as scored() makes them
    "constant": lambda s, role, i, dep: 1,
}


def ledger(readers=READERS, seeds: int = SEEDS, clear=lambda s, role, i: True, dep=behaviour) -> pd.DataFrame:
    """The ledger's rows for the text edits: every method x seed x model x probe; order 2 on odd probes."""
    rows = []
    for (name, top), s, role, i in itertools.product(readers.items(), range(seeds), "AB", range(PROBES)):
        depends = dep(s, role, i)
        t = top(s, role, i, depends)
        rows.append({"method": name, "yardstick": plan.JUDGE, "role": role, "record_id": f"s{s}/p{i}",
                     "top": t, "depends_on": depends, "margin": 1.0 if clear(s, role, i) else 0.1,
                     "agrees": float(t == depends), "clear": clear(s, role, i),
                     "departs": depends != (1 if role == "A" else 2), "order": 1 + i % 2, "study": f"s{s}"})
    return pd.DataFrame(rows)


def judging(judges: bool = True) -> dict:
    """Only the text edits judge (or, with ``judges`` False, none)."""
    return {y: {"planted": judges, "models_learned": True, "as_trained": 1.0,
                "judges": judges and y == plan.JUDGE} for y in YARDSTICKS}


NO_PLANTED = pd.DataFrame(columns=["method", "mechanism", "recovered"])


def judged(rows: pd.DataFrame, judges: bool = True) -> dict:
    return faithfulness(rows, judging(judges), NO_PLANTED, 0.95)


def test_a_method_following_behaviour_passes_and_a_rule_following_reading_fails() -> None:
    result = judged(ledger())
    assert result["power"] == {"studies": SEEDS, "clear": SEEDS * 2 * PROBES, "departures": SEEDS * 12,
                               "towards_cue_1": SEEDS * 6, "towards_cue_2": SEEDS * 6}
    methods = result["methods"]
    assert (methods["follows"]["verdict"], methods["follows"]["reasons"]) == ("passes", [])
    # the labels never fail a method that follows the model: where they part, the method sides with behaviour
    wrong = methods["follows"][plan.JUDGE]["label_rankers_wrong"]
    assert wrong["training_rule"] == {"k": SEEDS * 12, "n": SEEDS * 12}
    assert methods["rule"]["verdict"] == "fails"
    assert any("not above training_rule" in r for r in methods["rule"]["reasons"])
    # the baselines are scored like any method and never judged
    assert {methods[b]["verdict"] for b in ("training_rule", "constant")} == {"baseline"}


def test_the_constant_ranker_does_not_pass_its_departure_comparison() -> None:
    result = judged(ledger())
    always_1 = result["methods"]["always_1"]
    assert always_1["verdict"] == "fails"
    tests = {t["against"]: t for t in always_1["comparisons"] if t["method"] == "always_1"}
    assert tests["constant"]["only_method"] == tests["constant"]["only_against"] == 0
    assert tests["constant"]["p"] == 1.0  # the same readings as the constant: no evidence of reading a model
    # it is right on the departures towards cue 1 only: half of the training rule's failures
    wrong = always_1[plan.JUDGE]["label_rankers_wrong"]["training_rule"]
    assert (wrong["k"], wrong["n"]) == (SEEDS * 6, SEEDS * 12)


def test_departures_one_way_give_no_verdict() -> None:
    one_way = ledger(dep=lambda s, role, i: behaviour(s, role, i) if role == "B" else 1)  # A never departs
    result = judged(one_way)
    assert result["power"]["towards_cue_2"] == 0
    assert result["methods"]["follows"]["verdict"] == "no verdict"
    assert f"towards_cue_2 0 < {plan.MIN_EACH_WAY}" in result["methods"]["follows"]["reasons"]


def test_a_cell_is_judged_on_its_clear_probes_only() -> None:
    unclear = {3, 5}  # probes where the model's dependence is not clear
    readers = {**READERS, "follows_where_clear": lambda s, role, i, dep: dep if i not in unclear else 3 - dep}
    rows = ledger(readers, clear=lambda s, role, i: i not in unclear)
    result = judged(rows)
    method = result["methods"]["follows_where_clear"]
    assert method["verdict"] == "passes"
    cell = method[plan.JUDGE]["cells"]["A_order2"]
    odd = PROBES // 2  # model A's probes that state cue 2 first, per seed
    assert (cell["clear_k"], cell["clear_n"]) == (SEEDS * (odd - 2), SEEDS * (odd - 2))
    assert (cell["agreement_k"], cell["agreement_n"]) == (SEEDS * (odd - 2), SEEDS * odd)


def test_every_model_and_order_cell_must_meet_the_marks_and_orders_are_named_by_the_cue_first() -> None:
    def misses(s, role, i, dep):  # wrong on model B's odd probes (cue 2 stated first) in half of the seeds
        return 3 - dep if role == "B" and i % 2 and s % 2 else dep

    readers = {**READERS, "misses_B_order2": misses}
    result = judged(ledger(readers))
    method = result["methods"]["misses_B_order2"]
    cells = method[plan.JUDGE]["cells"]
    assert cells["B_order2"]["clear_k"] == SEEDS * PROBES // 4
    assert cells["B_order1"]["meets_marks"]
    assert cells["A_order2"]["meets_marks"]
    assert not cells["B_order2"]["meets_marks"]
    assert method["verdict"] == "fails"
    assert any(r.startswith(f"{plan.JUDGE}, B_order2:") for r in method["reasons"])
    assert not any("B_order1" in r for r in method["reasons"])


def test_a_yardstick_that_does_not_judge_gives_no_verdict_and_nothing_falls_back_to_the_labels() -> None:
    result = judged(ledger(), judges=False)
    assert result["judges"] == []
    for name in ("follows", "rule", "always_1"):
        assert result["methods"][name]["verdict"] == "no verdict"
        assert result["methods"][name]["reasons"][0].startswith(f"{plan.JUDGE} does not judge")
    assert result["methods"]["training_rule"]["verdict"] == "baseline"


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


# --- the whole study on planted text models --------------------------------------------------------------

N = 40  # probes, 20 in each cue order


@pytest.fixture(scope="module")
def probes():
    records = generate_swap((4, 2, N), 4, seed=11, order="counterbalanced")
    return [r for r in records if r.synthetic.variant == "probe"]


def readings(probes, tops: dict[str, dict[str, int]]) -> pd.DataFrame:
    """method -> role -> the cue it ranks first on every probe."""
    rows = []
    for method, by_role in tops.items():
        for role, top in by_role.items():
            best = (1.0, 0.0) if top == 1 else (0.0, 1.0)
            rows += [CueReading(best, best, 3).row(method, role, p.record_id) for p in probes]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def run(probes, readers, tops, learned: float = 1.0):
    behaviour_rows = pd.concat([cue_dependence(edit_widths(probes, r), role) for role, r in readers.items()])
    cues = {p.record_id: ([p.synthetic.cue_spans[0][0]], [p.synthetic.cue_spans[1][0]]) for p in probes}
    accuracy = {role: {"accuracy_own_cue": learned} for role in readers}
    inputs = FaithfulnessInputs(probes, readers, behaviour_rows, readings(probes, tops), cues, accuracy)
    return study_faithfulness(inputs, clear_margin=0.2, confidence=0.95)


@pytest.fixture(scope="module")
def departing(probes):
    readers = {"A": PLANTED[0].widths, "B": PLANTED[0].widths}  # both read cue 1
    return run(probes, readers, {"reads_model": {"A": 1, "B": 1}, "always_2": {"A": 2, "B": 2}})


def test_every_method_and_baseline_is_in_the_ledger_on_every_yardstick_model_and_order(departing) -> None:
    rows, result = departing
    assert set(rows["method"]) == {"reads_model", "always_2", *plan.LABEL_RANKERS}
    assert set(rows["yardstick"]) == set(YARDSTICKS)  # the training rule is no yardstick
    assert rows.groupby(["method", "yardstick"]).size().eq(2 * N).all()
    assert rows.drop_duplicates("record_id")["order"].value_counts().to_dict() == {1: N // 2, 2: N // 2}
    cells = result["methods"]["reads_model"]["text_edits"]["cells"]
    assert {"all", "A", "B", "order1", "order2", "A_order1", "A_order2", "B_order1", "B_order2"} == set(cells)
    assert (cells["A_order2"]["agreement_k"], cells["A_order2"]["agreement_n"]) == (N // 2, N // 2)
    assert result["plan_digest"] == plan.plan_digest()


def test_in_one_study_the_labels_do_not_judge_and_the_plan_gives_no_verdict(departing) -> None:
    _, result = departing
    assert result["yardsticks"]["text_edits"]["judges"]  # as_trained 0.5 is reported, not a condition
    assert result["yardsticks"]["text_edits"]["as_trained"] == 0.5
    assert not result["yardsticks"]["sentence_removed"]["judges"]  # misreads the planted saturation
    reads = result["methods"]["reads_model"]
    assert reads["text_edits"]["cells"]["B"]["clear"] == 1.0
    assert reads["text_edits"]["label_rankers_wrong"]["training_rule"] == {"k": N, "n": N}
    assert reads["verdict"] == "no verdict"  # one seed
    assert result["power"]["departures"] == N
    assert result["power"]["towards_cue_2"] == 0
    assert result["methods"]["training_rule"]["verdict"] == "baseline"
    metrics = faithfulness_metrics(result)
    assert metrics["reads_model"]["text_edits"]["B_order2"]["clear_n"] == N // 2
    assert metrics["reads_model"]["verdict"] == "no verdict"


@pytest.fixture(scope="module")
def as_trained(probes):
    """Model A reads cue 1, model B cue 2, as their labels."""
    readers = {"A": PLANTED[0].widths, "B": PLANTED[1].widths}
    return run(probes, readers, {"layer_ig": {"A": 1, "B": 2}, "grad_x_input": {"A": 1, "B": 1}})


def test_models_that_did_not_learn_their_cues_leave_no_yardstick_judging() -> None:
    dependence = pd.DataFrame({"yardstick": list(YARDSTICKS), "depends_on": 1, "as_trained": True})
    planted = dict.fromkeys(YARDSTICKS, True)
    learned = {"A": {"accuracy_own_cue": plan.MODELS_LEARNED}, "B": {"accuracy_own_cue": 1.0}}
    assert all(v["judges"] for v in validity(dependence, planted, learned).values())
    learned["A"]["accuracy_own_cue"] = plan.MODELS_LEARNED - 0.01
    assert not any(v["judges"] for v in validity(dependence, planted, learned).values())
    result = judged(ledger(), judges=False)
    assert "does not judge" in result["methods"]["follows"]["reasons"][0]


def test_pooling_studies_adds_their_counts_and_clusters_by_study(as_trained) -> None:
    rows, section = as_trained
    unlearned = copy.deepcopy(section)
    for y in YARDSTICKS:
        unlearned["yardsticks"][y].update(models_learned=False, judges=False)
    pooled = pooled_faithfulness({"s1": (rows, section), "s2": (rows, section)})
    one, both = section["methods"]["layer_ig"], pooled["methods"]["layer_ig"]
    for cell in ("all", "B_order2"):
        for key in ("agreement_k", "agreement_n", "clear_k", "clear_n"):
            assert both["text_edits"]["cells"][cell][key] == 2 * one["text_edits"]["cells"][cell][key]
    assert {t["strata"] for t in both["comparisons"]} == {2}
    assert pooled["power"]["studies"] == 2
    mixed = pooled_faithfulness({"s1": (rows, section), "s2": (rows, unlearned)})
    assert not mixed["yardsticks"]["text_edits"]["judges"]  # one study's models did not learn
    other_plan = {**section, "plan_digest": "plan-" + "0" * 16}
    with pytest.raises(ValueError, match="another analysis plan"):
        pooled_faithfulness({"s1": (rows, section), "s2": (rows, other_plan)})


def test_a_reading_without_a_yardsticks_dependence_is_refused(probes) -> None:
    measured = readings(probes[:2], {"layer_ig": {"A": 1}})
    dependence = pd.DataFrame({"yardstick": "text_edits", "role": "A", "record_id": [probes[0].record_id],
                               "depends_on": 1, "margin": 1.0})
    with pytest.raises(ValueError, match="without every yardstick's dependence"):
        scored(measured, dependence, {p.record_id: 1 for p in probes}, 0.2)
    full = pd.concat([dependence, dependence.assign(record_id=probes[1].record_id)])
    assert len(scored(measured, full, {p.record_id: 1 for p in probes}, 0.2)) == 2


def test_a_cue_is_ranked_by_its_summed_magnitude() -> None:
    """The plan's cue score: one strong token of cue 2 (best) against two moderate ones of cue 1 (total)."""
    reading = CueReading(best=(0.4, 0.6), total=(0.8, 0.6)).row("m", "A", "p")
    dependence = pd.DataFrame({"yardstick": plan.JUDGE, "role": "A", "record_id": ["p"], "depends_on": 1,
                               "margin": 1.0})
    rows = scored(pd.DataFrame([reading], columns=list(COLUMNS)), dependence, {"p": 1}, 0.2)
    assert rows["top"].tolist() == [1]
    assert rows["agrees"].tolist() == [1.0]
