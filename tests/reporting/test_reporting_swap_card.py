"""The report's swap card and its verdict (reporting/swap_card.py) on planted swap-study summaries."""

from __future__ import annotations

import copy

import pytest
from reporting_html_cases import bare_front

from xurs_pipeline.evaluation.significance import proportion
from xurs_pipeline.evaluation.swap.faithfulness import meets_marks
from xurs_pipeline.reporting.front_page import render_front
from xurs_pipeline.reporting.swap_card import SwapStudy, render_swap_card, swap_verdict


def study(trained: float = 0.95, low: float = 0.8, randomised=(0.5, 0.3, 0.7), own=(1.0, 0.85)) -> dict:
    """A summary.json as tasks/swap.py writes it."""

    def ranking(acc: float, lo: float, hi: float, share_low: float) -> dict:
        return {
            "swap_accuracy": acc,
            "swap_ci_low": lo,
            "swap_ci_high": hi,
            "n": 32,
            "swap_accuracy_A": acc,
            "swap_accuracy_B": acc,
            "learned_share": 0.7,
            "share_difference": 0.3,
            "share_ci_low": share_low,
            "share_ci_high": 0.5,
        }

    return {
        "studies": {
            "trained": ranking(trained, low, 1.0, 0.1),
            "randomised": ranking(*randomised, -0.1),
            "input_only": ranking(0.5, 0.33, 0.67, 0.0),
        },
        "accuracy": {
            role: dict(
                accuracy_own_cue=a,
                n_own_cue=45,
                accuracy_other_cue_only=0.5,
                n_other_cue_only=20,
                follows_other=0.0,
            )
            for role, a in zip("AB", own, strict=True)
        },
    }


def faithfulness_section(
    cells: dict[str, tuple[int, int]],
    verdict: str = "no verdict",
    reasons=("studies 1 < 5",),
    judges=("text_edits",),
) -> dict:
    """A summary's ``faithfulness`` section (``evaluation/swap/faithfulness.py``) for the run's method: its
    clear-probe counts per (model, order) cell on the text edits, each judged by ``meets_marks``."""
    judged = {}
    for name, (k, n) in cells.items():
        share = proportion(k, n, "clear")
        judged[name] = {**share, "meets_marks": meets_marks(share)}
    paper = {"text_edits": {"cells": judged}, "verdict": verdict, "reasons": list(reasons)}
    return {"methods": {"paper": paper}, "judges": list(judges)}


PASSING = {f"{role}_order{order}": (20, 20) for role in "AB" for order in (1, 2)}


def test_the_verdict_is_the_plans_against_behaviour_not_the_training_rule() -> None:
    """The training rule's swap accuracy says yes here; the plan's verdict fails the run's method on model
    B with cue 2 first against what the model does, so the answer is no, with its cells and reasons."""
    summary = study()  # trained swap accuracy 0.95 [0.80, 1.00]: the training rule followed
    assert summary["studies"]["trained"]["swap_ci_low"] >= 0.8
    summary["faithfulness"] = faithfulness_section(
        {**PASSING, "B_order2": (4, 8)}, "fails", ["text_edits, B_order2: 4/8 (low 0.22)"]
    )
    answer, css, detail = swap_verdict(SwapStudy.of(summary, "eg"))
    assert (answer, css) == ("no", "fail")
    assert "eg's agreement with what each model does (clear probes), by the analysis plan" in detail
    assert "fails: text_edits, B_order2: 4/8 (low 0.22)" in detail
    assert "text_edits, model B, cue 2 first: 4/8 (low 0.22) below the marks" in detail  # wilson(4, 8)
    assert "text_edits, model A, cue 1 first: 20/20 (low 0.84) meets the marks" in detail
    assert "not the answer: agreement with the training rule (swap accuracy) 0.95 [0.80, 1.00]" in detail


def test_yes_only_where_the_plan_says_passes() -> None:
    summary = study()
    summary["faithfulness"] = faithfulness_section(PASSING, "passes", [])
    assert swap_verdict(SwapStudy.of(summary))[:2] == ("yes", "pass")
    summary["faithfulness"] = faithfulness_section(PASSING)  # one seed: every cell meets the marks
    answer, css, detail = swap_verdict(SwapStudy.of(summary))
    assert (answer, css) == ("n/a", "none")
    assert "no verdict: studies 1 < 5" in detail


def test_without_a_judging_yardstick_or_a_faithfulness_study_there_is_no_answer() -> None:
    summary = study(trained=0.6, low=0.4)
    why = ["text_edits does not judge (planted False, models learned True)"]
    summary["faithfulness"] = faithfulness_section({**PASSING, "A_order1": (0, 20)}, "no verdict", why, ())
    answer, css, detail = swap_verdict(SwapStudy.of(summary))
    assert (answer, css) == ("n/a", "none")
    assert "no yardstick judges" in detail
    assert "text_edits does not judge (planted False" in detail
    answer, _, detail = swap_verdict(SwapStudy.of(study()))  # an older summary: no faithfulness section
    assert (answer, "no faithfulness study" in detail) == ("n/a", True)


def test_a_yardstick_that_does_not_judge_is_not_shown_as_evidence() -> None:
    summary = study()
    summary["faithfulness"] = faithfulness_section(PASSING, "passes", [])
    summary["faithfulness"]["methods"]["paper"]["sentence_removed"] = {
        "cells": {"A_order1": {**proportion(0, 20, "clear"), "meets_marks": False}}
    }
    answer, _, detail = swap_verdict(SwapStudy.of(summary))
    assert answer == "yes"
    assert "sentence_removed" not in detail


def test_skipped_stages_give_no_card() -> None:
    assert SwapStudy.of({"skipped": "data.source='medqa': ..."}) is None
    assert render_swap_card(None) == ""


def test_the_card_shows_every_ranking_and_both_models() -> None:
    html = str(render_swap_card(SwapStudy.of(study())))
    for text in (
        "trained models",
        "heads re-initialised",
        "input only",
        "A: cue 1",
        "B: cue 2",
        "0.95",
        "[0.80, 1.00]",
        "85%",
    ):
        assert text in html, text
    missing = copy.deepcopy(study())
    del missing["studies"]["trained"]["swap_accuracy_B"]  # a model without explanations: a dash, no error
    assert "—" in str(render_swap_card(SwapStudy.of(missing)))


def test_the_card_says_what_was_randomised() -> None:
    tuned = study()
    tuned["studies"]["randomised"]["scope"] = "tuned"
    html = str(render_swap_card(SwapStudy.of(tuned)))
    assert "heads and tuned blocks re-initialised" in html
    default = str(render_swap_card(SwapStudy.of(study())))  # the head-only default
    assert "heads and tuned blocks" not in default
    assert "heads re-initialised" in default


def _with_faithfulness(cells: dict[str, tuple[int, int]], verdict: str) -> dict:
    summary = study()  # the training rule followed in both cases
    summary["faithfulness"] = faithfulness_section(cells, verdict, [])
    return summary


FAILING = {**PASSING, "A_order2": (9, 20)}


@pytest.mark.parametrize(
    ("summary", "answer"),
    [(_with_faithfulness(PASSING, "passes"), "yes"), (_with_faithfulness(FAILING, "fails"), "no")],
)
def test_on_swap_data_the_front_pages_last_verdict_is_the_swap_control(summary: dict, answer: str) -> None:
    page = bare_front(swap=SwapStudy.of(summary))
    last = page.verdicts[-1]
    assert (last.question, last.answer) == ("Follows what each model learned?", answer)
    html = str(render_front(page))
    assert 'id="swap"' in html
    assert 'id="clue"' not in html  # the swap card replaces the clue card (cue 1 is only model A's clue)
    assert "Follows what each model learned?" in html
    plain = bare_front()
    assert plain.verdicts[-1].question == "Clue found?"
    assert 'id="swap"' not in str(render_front(plain))


def test_the_method_table_shows_each_method_against_behaviour_in_the_configs_order() -> None:
    """The card lists every compared method (the paper's estimator first) with its agreement on the clear
    probes, its interval and counts, and how often each model behaves as trained; a summary without the
    comparison (an older run) shows no method table."""
    import re

    summary = study()
    method = {
        "agreement_clear": 0.95,
        "agreement_clear_low": 0.83,
        "agreement_clear_high": 0.99,
        "agreement_clear_k": 19,
        "agreement_clear_n": 20,
        "agreement": 0.9,
        "swap": 0.8,
        "swap_low": 0.6,
        "swap_high": 0.9,
        "spearman": 0.7,
        "evals_median": 31.0,
    }
    failing = {**method, "agreement_clear": 0.5, "agreement_clear_k": 10}
    summary.update(
        methods={"random": failing, "paper": method},
        clear_margin=0.2,
        behaves_as_trained={"A": {"k": 16, "n": 16, "share": 1.0}, "B": {"k": 12, "n": 16, "share": 0.75}},
    )
    text = " ".join(re.sub(r"<[^>]+>", " ", str(render_swap_card(SwapStudy.of(summary)))).split())
    assert "Model A depends on cue 1 on 16 of 16 probes, model B on cue 2 on 12 of 16" in text
    assert text.index(" paper 0.95 [0.83, 0.99] 19/20") < text.index(" random 0.50 [0.83, 0.99] 10/20")
    assert "a margin of at least 0.20" in text
    older = study()
    assert "Which explanation to trust" not in str(render_swap_card(SwapStudy.of(older)))


def test_model_c_is_shown_by_what_its_labels_follow_and_never_marked_by_the_learning_gate() -> None:
    """Model C has no cue of its own: its row names both cues, and its accuracy (where the cues agree) is
    shown without the pass or fail mark A's and B's carry, whatever its value."""
    summary = study()
    low_c = {**summary["accuracy"]["A"], "accuracy_own_cue": 0.5, "n_own_cue": 21}
    summary["accuracy"]["C"] = low_c
    html = str(render_swap_card(SwapStudy.of(summary)))
    row = html[html.index("C: both cues, where they agree") :].split("</tr>")[0]
    assert "50%" in row
    assert "pass" not in row
    assert "fail" not in row
    b_row = html[html.index("B: cue 2") :].split("</tr>")[0]
    assert "fail" in b_row  # B at 85% is below the 90% mark: the mark C never gets
