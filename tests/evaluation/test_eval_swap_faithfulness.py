"""The swap study's verdict (evaluation/swap/faithfulness.py) by the analysis plan (plan.py): behaviour
judges, the labels never do. Two kinds of case:

- ledgers built by hand (seeds x probes x models, with departures from the training rule towards each cue),
  where every count and verdict is known, and each rule the plan states has a case where it must fail;
- the whole study on planted text models (model A reads cue 1 as trained; model B, trained on cue 2, reads
  cue 1 too), end to end through ``study_faithfulness``.
"""

from __future__ import annotations

import copy

import pandas as pd
import pytest
from swap_ledgers import judged, ledger, through_scored

from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.behaviour import cue_dependence
from xurs_pipeline.evaluation.swap.faithfulness import (
    FaithfulnessInputs,
    models_learned,
    scored,
    study_faithfulness,
    validity,
)
from xurs_pipeline.evaluation.swap.planted_texts import PLANTED
from xurs_pipeline.evaluation.swap.pooled import pooled_faithfulness
from xurs_pipeline.evaluation.swap.readings import COLUMNS, CueReading
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS, yardstick_widths
from xurs_pipeline.reporting.swap_metrics import faithfulness_metrics

# --- the whole study on planted text models --------------------------------------------------------------

N = 40  # probes, 20 in each cue order


@pytest.fixture(scope="module")
def probes():
    records = generate_swap((4, 2, N), 4, seed=11, order="counterbalanced")
    return [r for r in records if r.synthetic.variant == "probe"]


def readings(probes, tops: dict[str, dict]) -> pd.DataFrame:
    """method -> role -> the cue it ranks first on every probe (or a function of the probe giving it)."""
    rows = []
    for method, by_role in tops.items():
        for role, top in by_role.items():
            for p in probes:
                best = (1.0, 0.0) if (top(p) if callable(top) else top) == 1 else (0.0, 1.0)
                rows.append(CueReading(best, best, 3).row(method, role, p.record_id))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def stated_first(probe) -> int:
    """The cue the probe's question states first, read from its text (cue 1 tests blood, cue 2 urine)."""
    return 1 if probe.question.index("blood test") < probe.question.index("urine test") else 2


def run(probes, readers, tops, learned: float = 1.0):
    behaviour_rows = pd.concat(
        [cue_dependence(yardstick_widths(probes, r, "text_edits"), role) for role, r in readers.items()]
    )
    cues = {p.record_id: ([p.synthetic.cue_spans[0][0]], [p.synthetic.cue_spans[1][0]]) for p in probes}
    accuracy = {role: {"accuracy_own_cue": learned} for role in readers}
    inputs = FaithfulnessInputs(probes, readers, behaviour_rows, readings(probes, tops), cues, accuracy)
    return study_faithfulness(inputs, clear_margin=0.2, confidence=0.95)


@pytest.fixture(scope="module")
def departing(probes):
    readers = {"A": PLANTED[0].widths, "B": PLANTED[0].widths}  # both read cue 1
    first = {"A": stated_first, "B": stated_first}  # ranks first the cue the text states first
    return run(
        probes, readers, {"reads_model": {"A": 1, "B": 1}, "always_2": {"A": 2, "B": 2}, "first": first}
    )


def test_every_method_and_baseline_is_in_the_ledger_on_every_yardstick_model_and_order(departing) -> None:
    rows, result = departing
    judged = {"reads_model", "always_2", "first"}
    copies = {f"{m}~{d}" for m in judged for d in plan.DEGRADATIONS}  # read by the known-ranking check
    assert set(rows["method"]) == judged | copies | set(plan.LABEL_RANKERS)
    assert set(result["methods"]) == judged | set(plan.LABEL_RANKERS)
    ranking = result["yardsticks"][plan.JUDGE]["known_ranking"]  # only reads_model is credited
    assert {d: (c["k"], c["k_degraded"], c["n"]) for d, c in ranking["reads_model"].items()} == {
        "swapped": (2 * N, 0, 2 * N),
        "half_swapped": (2 * N, N, 2 * N),  # half of each model's probes exchanged
    }
    assert list(ranking) == ["reads_model"]
    assert result["yardsticks"][plan.JUDGE]["ranks_degraded"]
    assert set(rows["yardstick"]) == set(YARDSTICKS)  # the training rule is no yardstick
    assert rows.groupby(["method", "yardstick"]).size().eq(2 * N).all()
    assert rows.drop_duplicates("record_id")["order"].value_counts().to_dict() == {1: N // 2, 2: N // 2}
    cells = result["methods"]["reads_model"]["text_edits"]["cells"]
    assert {"all", "A", "B", "order1", "order2", "A_order1", "A_order2", "B_order1", "B_order2"} == set(cells)
    assert (cells["A_order2"]["agreement_k"], cells["A_order2"]["agreement_n"]) == (N // 2, N // 2)
    assert result["plan_digest"] == plan.plan_digest()


def test_orders_are_named_by_the_cue_the_text_states_first(probes, departing) -> None:
    rows, result = departing
    assert dict(zip(rows["record_id"], rows["order"], strict=False)) == {
        p.record_id: stated_first(p) for p in probes
    }
    cells = result["methods"]["first"][plan.JUDGE]["cells"]
    for role in ("A", "B"):  # both models depend on cue 1: the cue stated first is right in order 1 only
        assert (cells[f"{role}_order1"]["agreement_k"], cells[f"{role}_order1"]["agreement_n"]) == (
            N // 2,
            N // 2,
        )
        assert (cells[f"{role}_order2"]["agreement_k"], cells[f"{role}_order2"]["agreement_n"]) == (0, N // 2)


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
    learned = {"A": {"accuracy_own_cue": plan.MODELS_LEARNED}, "B": {"accuracy_own_cue": 1.0}}
    assert models_learned(learned)
    learned["A"]["accuracy_own_cue"] = plan.MODELS_LEARNED - 0.01
    assert not models_learned(learned)
    rows = through_scored(ledger(), degrade=True)  # "follows" is credited: its degraded copies ranked below
    planted = dict.fromkeys(YARDSTICKS, True)
    assert all(v["judges"] for v in validity(rows, planted, True, 0.95).values())
    assert not any(v["judges"] for v in validity(rows, planted, False, 0.95).values())
    result = judged(rows, judges=False)
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
    dependence = pd.DataFrame(
        {
            "yardstick": "text_edits",
            "role": "A",
            "record_id": [probes[0].record_id],
            "depends_on": 1,
            "margin": 1.0,
            "share_1": 1.0,
        }
    )
    with pytest.raises(ValueError, match="without every yardstick's dependence"):
        scored(measured, dependence, {p.record_id: 1 for p in probes}, 0.2)
    full = pd.concat([dependence, dependence.assign(record_id=probes[1].record_id)])
    assert len(scored(measured, full, {p.record_id: 1 for p in probes}, 0.2)) == 2


def test_a_cue_is_ranked_by_its_summed_magnitude() -> None:
    """The plan's cue score: one strong token of cue 2 (best) against two moderate ones of cue 1 (total)."""
    reading = CueReading(best=(0.4, 0.6), total=(0.8, 0.6)).row("m", "A", "p")
    dependence = pd.DataFrame(
        {
            "yardstick": plan.JUDGE,
            "role": "A",
            "record_id": ["p"],
            "depends_on": 1,
            "margin": 1.0,
            "share_1": 1.0,
        }
    )
    rows = scored(pd.DataFrame([reading], columns=list(COLUMNS)), dependence, {"p": 1}, 0.2)
    assert rows["top"].tolist() == [1]
    assert rows["agrees"].tolist() == [1.0]
