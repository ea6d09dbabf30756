"""The swap study's yardsticks (evaluation/swap/yardsticks.py) and their validation on hand-set text models
(planted_texts.py): each edit changes one cue and nothing else; the text edits recover every member of every
planted family, the edits that remove a cue or its names miss the members that read a missing cue like the
probe's, whatever value is declared; the behavioural measure needs both of its edits (an asymmetric planted
model)."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.swap import planted_texts
from xurs_pipeline.evaluation.swap.behaviour import cue_dependence
from xurs_pipeline.evaluation.swap.planted_texts import (
    PLANTED,
    UNREAD_GRID,
    PlantedText,
    cue_state,
    recovery,
    validated,
    variants,
)
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
    """Each content model is a family over what it makes of a cue it cannot read: the text edits never
    produce that state and recover every member; the removals, unseen names and renamed test miss the
    members that read a missing cue like the probe's (effect 0), on every content model."""
    recovered = recovery(probes)
    assert len(recovered) == len(PLANTED) * len(YARDSTICKS)
    table = recovered.set_index(["yardstick", "planted"])
    content = [p for p in PLANTED if p.kind == "content"]
    for model in content:
        members = len(variants(model))
        assert table.loc[("text_edits", model.name), "n"] == members * len(probes)
        assert table.loc[("text_edits", model.name), "recovered"]
        for yardstick in YARDSTICKS[1:]:
            assert 0 < table.loc[(yardstick, model.name), "k"] < table.loc[(yardstick, model.name), "n"]
    assert validated(recovered) == {
        "text_edits": True,
        "sentence_removed": False,
        "unseen_names": False,
        "test_renamed": False,
    }


def test_no_declared_value_of_a_missing_cue_sets_the_validation(probes, monkeypatch) -> None:
    """The old suite's outcome hung on two hand-set constants (a saturated or cancelling cue 1 read as
    absent at its 'other' value validated every yardstick); each family spans every such value, so
    declaring any other changes nothing."""
    before = validated(recovery(probes))
    declared = tuple(
        replace(m, values=tuple({**v, "absent": v["other"], "unknown": v["other"]} for v in m.values))
        if m.kind == "content"
        else m
        for m in PLANTED
    )
    monkeypatch.setattr(planted_texts, "PLANTED", declared)
    assert validated(recovery(probes)) == before


def test_a_family_spans_each_cue_from_its_lowest_stated_value_to_its_highest() -> None:
    saturated = next(m for m in PLANTED if m.name == "saturated")
    members = variants(saturated)
    assert len(members) == UNREAD_GRID**2
    for k, cue in enumerate(saturated.values):
        stated = [cue[s] for s in ("label", "pair", "other")]
        unread = sorted({m.values[k]["absent"] for m in members})
        np.testing.assert_allclose(unread, np.linspace(min(stated), max(stated), UNREAD_GRID))
        assert all(m.values[k]["unknown"] == m.values[k]["absent"] for m in members)
        assert all(
            {s: m.values[k][s] for s in ("label", "pair", "other")}
            == dict(zip(("label", "pair", "other"), stated, strict=True))
            for m in members
        )
    presence = next(m for m in PLANTED if m.kind == "presence")
    assert variants(presence) == [presence]


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
    model = variants(PLANTED[0])[-1]  # cue 1: label -0.4, pair 0, other +0.4; unread at the top, +0.4
    for yardstick, expected in (
        ("text_edits", 0.4),
        ("sentence_removed", 0.4),
        ("unseen_names", 0.4),
        ("test_renamed", 0.4),
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
