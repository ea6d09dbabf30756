"""The swap study's behavioural measure (evaluation/swap/behaviour.py) on planted models whose dependence is
known: the edits are the probe with one cue resolved or turned; the measure names the cue a model reads."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from swap_ledgers import judged

from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.agreement import behaves_as_trained, descriptions
from xurs_pipeline.evaluation.swap.behaviour import EDITS, cue_dependence, edited_records
from xurs_pipeline.evaluation.swap.faithfulness import scored
from xurs_pipeline.evaluation.swap.readings import COLUMNS, CueReading
from xurs_pipeline.evaluation.swap.yardsticks import yardstick_widths

CUE = re.compile(r"The (blood|urine) test is positive for ([^.]+)\.")


@pytest.fixture(scope="module")
def probes():
    records = generate_swap((4, 2, 10), 4, seed=5)
    return [r for r in records if r.synthetic.variant == "probe"]


def cue_names(question: str) -> dict[str, list[str]]:
    return {m[1]: m[2].split(" or ") for m in CUE.finditer(question)}


def reading(weights: tuple[float, float]):
    """A planted model: the label's width is a weighted sum over the cues (blood = cue 1, urine = cue 2) of
    0.5 where the cue names two conditions, 0.1 where it names only the label, 0.9 where only another."""

    def width(record) -> float:
        label = record.options[record.answer_idx]
        names = cue_names(record.question)
        part = [
            0.5 if len(n) == 2 else 0.1 if n == [label] else 0.9 for n in (names["blood"], names["urine"])
        ]
        return weights[0] * part[0] + weights[1] * part[1]

    return lambda records: np.array([width(r) for r in records])


def test_edits_change_one_cue_and_keep_everything_else(probes) -> None:
    probe = probes[0]
    edits = edited_records(probe)
    assert [e.record_id.split("|")[1] for e in edits] == list(EDITS)
    base = cue_names(probe.question)
    label = probe.options[probe.answer_idx]
    for edit in edits[1:]:
        kind, k = edit.record_id.split("|")[1].split("_")
        test, other = ("blood", "urine") if k == "1" else ("urine", "blood")
        names = cue_names(edit.question)
        assert names[other] == base[other]  # the other cue untouched
        assert names[test] == ([label] if kind == "resolve" else [n for n in base[test] if n != label])
        for span, test_name in zip(edit.synthetic.cue_spans, ("blood", "urine"), strict=True):
            assert edit.question[span[0] : span[1]] == " or ".join(names[test_name])  # spans moved with it
        assert edit.answer_idx == probe.answer_idx
        assert edit.options == probe.options


def test_a_model_that_reads_only_cue_1_depends_on_cue_1_on_every_probe(probes) -> None:
    a = cue_dependence(yardstick_widths(probes, reading((1.0, 0.0)), "text_edits"), "A")
    assert (a["depends_on"] == 1).all()
    assert (a["margin"] == 1.0).all()
    assert a["effect_1"].to_numpy() == pytest.approx(0.4)  # (|0.1 - 0.5| + |0.9 - 0.5|) / 2
    # model B was trained on cue 2 and reads cue 1
    b = cue_dependence(yardstick_widths(probes, reading((1.0, 0.0)), "text_edits"), "B")
    tops = {"m": {(role, p.record_id): 1 for role in "AB" for p in probes}}
    assert behaves_as_trained(ledger_of(tops, pd.concat([a, b]))) == {
        "A": {"k": len(probes), "n": len(probes), "share": 1.0},
        "B": {"k": 0, "n": len(probes), "share": 0.0},
    }


def test_a_model_that_reads_both_cues_depends_on_the_stronger_by_its_margin(probes) -> None:
    both = cue_dependence(yardstick_widths(probes, reading((0.3, 0.7)), "text_edits"), "B")
    assert (both["depends_on"] == 2).all()
    assert both["margin"].to_numpy() == pytest.approx(0.4)  # |0.3 - 0.7| / (0.3 + 0.7)
    assert both["share_1"].to_numpy() == pytest.approx(0.3)
    tie = cue_dependence(yardstick_widths(probes, reading((0.5, 0.5)), "text_edits"), "A")
    assert (tie["depends_on"] == 0).all()


def test_a_non_probe_is_refused(probes) -> None:
    case = next(r for r in generate_swap((4, 2, 10), 4, seed=5) if r.synthetic.has_result)
    with pytest.raises(ValueError, match="not a swap probe"):
        edited_records(case)


def ledger_of(tops: dict[str, dict[tuple[str, str], int]], behaviour: pd.DataFrame) -> pd.DataFrame:
    """method -> (role, probe) -> the cue it ranks first, against the behaviour as the judge: the ledger."""
    rows = [
        CueReading((0.0, 0.0), (float(t == 1), float(t == 2)), 1).row(m, role, rid)
        for m, by in tops.items()
        for (role, rid), t in by.items()
    ]
    readings = pd.DataFrame(rows, columns=list(COLUMNS))
    order = dict.fromkeys(readings["record_id"], 1)
    return scored(readings, behaviour.assign(yardstick=plan.JUDGE), order, clear_margin=0.2)


def described(tops: dict[str, dict[tuple[str, str], int]], behaviour: pd.DataFrame) -> dict:
    """The methods' descriptions read off :func:`ledger_of` (``agreement.descriptions``)."""
    ledger = ledger_of(tops, behaviour)
    return descriptions(ledger, judged(ledger), 0.95)


def test_agreement_describes_a_method_that_follows_behaviour_and_model_independent_ones(probes) -> None:
    """A reads cue 1, B cue 2 (planted): the method that ranks the cue each model reads agrees everywhere;
    a ranking that does not depend on the model (always cue 1, as an input-only ranking) agrees on half.
    These are descriptions: the verdict is the analysis plan's (faithfulness.py)."""
    behaviour = pd.concat(
        [
            cue_dependence(yardstick_widths(probes, reading((1.0, 0.0)), "text_edits"), "A"),
            cue_dependence(yardstick_widths(probes, reading((0.0, 1.0)), "text_edits"), "B"),
        ]
    )
    keys = [(role, p.record_id) for role in ("A", "B") for p in probes]
    rng = np.random.default_rng(0)
    tops = {
        "faithful": {k: 1 if k[0] == "A" else 2 for k in keys},
        "input_only": dict.fromkeys(keys, 1),
        "random": {k: int(rng.integers(1, 3)) for k in keys},
    }
    result = described(tops, behaviour)
    assert result["faithful"]["agreement_clear"] == 1.0
    assert result["faithful"]["spearman"] == pytest.approx(1.0)
    assert result["input_only"]["agreement"] == 0.5
    assert result["input_only"]["agreement_A"] == 1.0
    assert result["input_only"]["agreement_B"] == 0.0
    assert "passes" not in result["faithful"]  # no second verdict beside the plan's
    assert result["faithful"]["swap"] == 1.0  # here behaviour and the training rule coincide
    assert result["faithful"]["evals_median"] == 1.0


def test_agreement_follows_behaviour_where_it_departs_from_the_training_rule(probes) -> None:
    """Model B reads cue 1 (it did not learn its labels' rule): a method ranking cue 1 for B agrees with the
    model and fails the training-rule swap accuracy."""
    behaviour = pd.concat(
        [cue_dependence(yardstick_widths(probes, reading((1.0, 0.0)), "text_edits"), role) for role in "AB"]
    )
    keys = [(role, p.record_id) for role in ("A", "B") for p in probes]
    result = described({"m": dict.fromkeys(keys, 1)}, behaviour)["m"]
    assert result["agreement"] == 1.0
    assert (result["swap_k"], result["swap_n"]) == (len(probes), 2 * len(probes))
