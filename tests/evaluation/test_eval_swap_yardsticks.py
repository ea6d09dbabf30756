"""The swap study's yardsticks (evaluation/swap/yardsticks.py) and their validation on hand-set text models
(planted_texts.py): each edit changes one cue and nothing else; the text edits recover every planted
dependence, the edits that remove a cue fail exactly where the planted mechanism hides it (saturation,
cancellation); the behavioural measure needs both of its edits (an asymmetric planted model)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.swap.behaviour import cue_dependence
from xurs_pipeline.evaluation.swap.planted_texts import PLANTED, PlantedText, cue_state, recovery, validated
from xurs_pipeline.evaluation.swap.yardsticks import (
    EDITS,
    UNSEEN_NAMES,
    YARDSTICKS,
    yardstick_widths,
)

SENTENCE = re.compile(r"The (\w+) test is positive for ([^.]+)\.")


@pytest.fixture(scope="module", params=["fixed", "counterbalanced"])
def probes(request):
    records = generate_swap((4, 2, 10), 4, seed=5, order=request.param)
    return [r for r in records if r.synthetic.variant == "probe"]


def sentences(question: str) -> dict[str, str]:
    return {m[1]: m[2] for m in SENTENCE.finditer(question)}


@pytest.mark.parametrize("yardstick", YARDSTICKS[1:])
def test_each_edit_changes_only_its_cue(probes, yardstick: str) -> None:
    for probe in probes:
        base = sentences(probe.question)
        for k, (test, other) in enumerate((("blood", "urine"), ("urine", "blood"))):
            (edit,) = EDITS[yardstick](probe, k)
            found = sentences(edit.question)
            assert found[other] == base[other]  # the other cue untouched
            assert (edit.answer_idx, edit.options) == (probe.answer_idx, probe.options)
            if yardstick == "sentence_removed":
                assert test not in found
                assert len(edit.question) == len(probe.question) - len(
                    f" The {test} test is positive for {base[test]}."
                )
            elif yardstick == "unseen_names":
                assert found[test] == " or ".join(UNSEEN_NAMES)
                assert cue_state(edit, k) == "unknown"
            else:
                assert test not in found
                assert found["saliva"] == base[test]
                assert cue_state(edit, k) == "absent"


def test_the_text_edits_recover_every_planted_dependence_and_the_removals_do_not(probes) -> None:
    recovered = recovery(probes)
    assert len(recovered) == len(PLANTED) * len(YARDSTICKS)
    table = recovered.set_index(["yardstick", "planted"])
    content = [p.name for p in PLANTED if p.kind == "content"]
    assert table.loc[[("text_edits", p) for p in content], "recovered"].all()
    for yardstick in YARDSTICKS[1:]:
        for planted in ("cue_1", "cue_2", "interaction"):
            assert table.loc[(yardstick, planted), "recovered"]
        for planted in ("saturated", "cancelling"):  # cue 1 removed reads like the probe's cue 1: effect 0
            assert table.loc[(yardstick, planted), "k"] == 0
    assert validated(recovered) == {
        "text_edits": True,
        "sentence_removed": False,
        "unseen_names": False,
        "test_renamed": False,
    }


def test_the_text_edits_cannot_see_a_cue_read_only_by_its_presence(probes) -> None:
    """The validation is a test a yardstick can fail: the text edits keep every sentence, so a model that
    reads only whether cue 1 is stated looks to them like a model of cue 2 (its weak reading); removing the
    sentence or renaming its test sees it. A presence model does not ask the study's question (which cue's
    named condition the width reads), so it does not enter the validation."""
    table = recovery(probes).set_index(["yardstick", "planted"])
    assert table.loc[("text_edits", "presence"), "k"] == 0
    assert table.loc[("sentence_removed", "presence"), "recovered"]
    assert table.loc[("test_renamed", "presence"), "recovered"]
    assert not table.loc[("unseen_names", "presence"), "recovered"]  # the sentence stays, names unknown
    presence_counted = recovery(probes).assign(kind="content")
    assert not validated(presence_counted)["text_edits"]


def test_a_planted_model_of_the_other_cue_is_not_recovered_as_the_first(probes) -> None:
    wrong = PlantedText("cue_2_claimed_1", PLANTED[1].values, truth=1)
    effects = yardstick_widths(probes, wrong.widths, "text_edits")
    assert (cue_dependence(effects, "A")["depends_on"] == 2).all()


def test_yardstick_effects_are_the_planted_width_changes(probes) -> None:
    model = PLANTED[0]  # cue 1: label -0.4, pair 0, other +0.4, absent +0.1
    for yardstick, expected in (
        ("text_edits", 0.4),
        ("sentence_removed", 0.1),
        ("unseen_names", 0.1),
        ("test_renamed", 0.1),
    ):
        effects = yardstick_widths(probes, model.widths, yardstick)
        np.testing.assert_allclose(effects["probe"], 0.5)
        np.testing.assert_allclose(effects["effect_1"], expected)
        np.testing.assert_allclose(effects["effect_2"], 0.0)


# An asymmetric planted model for the behaviour: resolving a cue moves the width by (cue 1) 0.0 and
# (cue 2) 0.3, turning it to another condition by 0.5 and 0.1. Both edits: e1 = 0.25 > e2 = 0.2 (cue 1);
# resolve edits alone would say cue 2, other edits alone would give e1 = 0.5: dropping either edit fails.
ASYMMETRIC = PlantedText(
    "asymmetric",
    (
        {"label": 0.0, "pair": 0.0, "other": 0.5, "absent": 0.0, "unknown": 0.0},
        {"label": -0.3, "pair": 0.0, "other": 0.1, "absent": 0.0, "unknown": 0.0},
    ),
    truth=1,
)


def test_the_behaviour_needs_both_edits_of_each_cue(probes) -> None:
    found = cue_dependence(yardstick_widths(probes, ASYMMETRIC.widths, "text_edits"), "A")
    np.testing.assert_allclose(found["effect_1"], 0.25)  # (|0.0| + |0.5|) / 2
    np.testing.assert_allclose(found["effect_2"], 0.2)  # (|-0.3| + |0.1|) / 2
    assert (found["depends_on"] == 1).all()
    np.testing.assert_allclose(found["margin"], 0.05 / 0.45)
    widths = yardstick_widths(probes, ASYMMETRIC.widths, "text_edits")
    moved = {k: (widths[f"resolve_{k}"] - widths["probe"]).abs() for k in (1, 2)}
    assert (moved[1] < moved[2]).all()  # the resolve edit alone names the wrong cue
