"""The report's front page: experiment, model, data, accuracy against chance, Table 1, every check by name
with its verdict, links to every table (rendered from Markdown), plot and explanation page."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

import pandas as pd
import pytest
from reporting_html_cases import small_view  # the page tests' example view

from xurs_pipeline.evaluation.evidence import localisation_summary
from xurs_pipeline.reporting.front_page import (
    AccuracyRow,
    AttributionError,
    CheckLine,
    ClueRow,
    EffectRow,
    EndpointRow,
    FrontPage,
    Link,
    markdown_title,
    render_front,
    table_page,
)
from xurs_pipeline.reporting.html_index import index_entry, render_index
from xurs_pipeline.reporting.html_view import CheckRow
from xurs_pipeline.reporting.tables import attribution_error_frame

PAGE = FrontPage(
    experiment="local",
    model="SmolLM2-135M-Instruct.Q4_1 (head_only, linear head)",
    data="synthetic_v1: 96 records (train 64, dev 16, test 16)",
    config_hash="abc123",
    accuracy=(
        AccuracyRow("dev", 16, 0.8125, 0.25, 0.3125, 1.0, 0.625, 0.71, 0.69),
        AccuracyRow("test", 16, 0.25, 0.25, 0.375, 0.25, 0.25, None, None),
    ),
    effects=(EffectRow("width", 6, 0.0123, 0.004, 0.02),),
    checks=(
        CheckLine("completeness_eg_train", "median_residual", 0.0185, "<= 0.01", False),
        CheckLine("completeness_eg_train", "max_residual", 0.0227, "<= 0.05", True),
    ),
    tables=(Link("table1_effects", "tables/table1_effects.html", "Mean advantage"),),
    skipped=(Link("table3_endpoints", "", "the experiment has no aligned references"),),
    plots=(Link("topk curve", "../plots/topk_curve.png", "Mean advantage when masking the top k"),),
)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a":
            self.links.append(a["href"])
        if tag == "img":
            self.images.append(a["src"])
        if tag not in ("img", "meta", "br", "input"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag

    def handle_data(self, data):
        self.text.append(data)


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    assert page.stack == []  # well nested
    return page


def test_front_page_shows_accuracy_against_chance_table1_checks_and_links():
    label = "Completeness residual R (Eq. 9)"
    view_checks = (CheckRow("completeness_residual", label, 0.2, 0.05, "<=", False),)
    entry = index_entry(small_view(checks=view_checks), href="q1.html")
    html = render_index([entry], title="XU-RS report: local", front=render_front(PAGE))
    page = _parse(html)
    text = re.sub(r"\s+", " ", " ".join(page.text))
    for fact in (
        "local",
        "SmolLM2-135M-Instruct.Q4_1",
        "96 records",
        "81.2%",
        "25.0%",
        "31.2%",
        "62.5%",
        "+0.0123",
        "[+0.0040, +0.0200]",
        "Attribution checks: 1 of 2 passed",
        "table3_endpoints: not made (the experiment has no aligned references)",
    ):
        assert fact in text, fact
    pattern = r"<tr><td>completeness_eg_train · (\w+)</td>.*?<td class=\"(pass|fail)\">(pass|FAIL)"
    rows = re.findall(pattern, html, re.DOTALL)
    assert rows == [("median_residual", "fail", "FAIL"), ("max_residual", "pass", "pass")]
    assert {"tables/table1_effects.html", "../plots/topk_curve.png", "q1.html"} <= set(page.links)
    assert page.images == ["../plots/topk_curve.png"]
    assert "Mean advantage when masking the top k" in text  # one line per figure
    # the explanation list names the failed check, not only "FAIL"
    assert "FAIL: Completeness residual R (Eq. 9)" in text
    # dev beats chance and the majority answer; test does not
    assert re.search(r'class="num pass">81.2%', html)
    assert re.search(r'class="num fail">25.0%', html)


def test_table_page_renders_the_markdown_table_and_escapes_html():
    markdown = (
        "**Every check <b>with</b> its verdict.**\n\n| Check | Value |\n|---|---:|\n"
        "| median_residual | 0.0185 |\n| <script>x</script> | 1 |\n\n_experiment local, config abc_\n"
    )
    html = table_page("verdicts", markdown)
    page = _parse(html)
    assert "<table>" in html
    assert "<td>median_residual</td>" in html
    assert "<script>" not in html
    assert "../index.html" in page.links
    assert markdown_title(markdown, "x") == "Every check <b>with</b> its verdict."
    assert markdown_title("| a |\n", "fallback") == "fallback"


def _attributions(exhausted: list[bool]) -> pd.DataFrame:
    """Rows of an attributions table (only the error columns the report reads), one per question."""
    n = len(exhausted)
    return pd.DataFrame(
        {
            "record_id": [f"q{i}" for i in range(n)],
            "target": [0] * n,
            "method": ["kronrod"] * n,
            "residual": [0.002 * (i + 1) for i in range(n)],
            "error_bound": [0.004 * (i + 1) for i in range(n)],
            "grad_evals": [30 * (i + 1) for i in range(n)],
            "roughness": [1.0 + i for i in range(n)],
            "budget_exhausted": exhausted,
        }
    )


def test_the_front_page_names_every_question_whose_budget_ran_out() -> None:
    error = AttributionError.of(_attributions([False, True, False, True]))
    assert error.budget_ran_out == ("q1", "q3")
    assert error.ran_out == (("q1", pytest.approx(0.004)), ("q3", pytest.approx(0.008)))  # the R each reached
    assert error.residual_max == pytest.approx(0.008)
    assert error.residual_median == pytest.approx(0.005)
    assert error.error_bound_max == pytest.approx(0.016)
    assert error.grad_evals_per_question == pytest.approx(75.0)
    text = " ".join(_parse(str(render_front(replace(PAGE, error=error)))).text)
    assert "budget ran out before the tolerance on 2" in " ".join(text.split())
    assert "q1: budget exhausted at R 0.004 q3: budget exhausted at R 0.008" in " ".join(text.split())
    assert "reaching R up to 0.008" in " ".join(text.split())  # the verdict line's detail
    met = replace(PAGE, error=AttributionError.of(_attributions([False])))
    clean = " ".join(_parse(str(render_front(met))).text)
    assert "Every question reached its estimator's tolerance" in clean
    assert "ran out" not in clean
    assert "Nothing was attributed" in " ".join(_parse(str(render_front(PAGE))).text)


def test_the_attribution_error_table_lists_ran_out_questions_first_with_their_numbers() -> None:
    rows = _attributions([False, True, False, True])
    frame = attribution_error_frame(rows)
    assert frame["record_id"].tolist() == ["q3", "q1", "q2", "q0"]  # ran out first, then by R descending
    assert frame["budget"].tolist() == ["RAN OUT", "RAN OUT", "met", "met"]
    merged = frame.merge(rows, on="record_id", suffixes=("", "_in"))
    for column in ("residual", "error_bound", "grad_evals", "roughness"):
        assert (merged[column] == merged[f"{column}_in"]).all(), column
    assert attribution_error_frame(rows.iloc[:0]).empty
    assert frame[["rerun_cosine", "rerun_distance"]].isna().all().all()  # no rerun: a dash, no number


def _rerun_vectors(cosine: list[float], distance: list[float]) -> pd.DataFrame:
    """The attribute stage's rerun_vectors.parquet for questions q0, q1, ... (answer 0 each)."""
    frame = pd.DataFrame({"record_id": [f"q{i}" for i in range(len(cosine))], "target": 0, "cosine": cosine})
    return frame.assign(relative_distance=distance)


def test_the_vector_figures_against_the_stages_own_rerun_reach_the_table_and_the_front_page() -> None:
    """Per answer in the attribution_error table (joined on question and answer), median and worst on the
    front page, passing on App. B.4's medians (cosine >= 0.99, distance <= 0.10) and failing beyond them;
    no rerun, no paragraph."""
    rows = _attributions([False, True, False, True])
    vectors = _rerun_vectors([0.999, 0.98, 0.997, 0.995], [0.01, 0.2, 0.03, 0.05])
    frame = attribution_error_frame(rows, vectors).set_index("record_id")
    assert frame.loc["q1", "rerun_cosine"] == 0.98
    assert frame.loc["q3", "rerun_distance"] == 0.05
    error = AttributionError.of(rows, vectors)
    assert error.rerun is not None
    assert (error.rerun.cosine_median, error.rerun.cosine_min) == (pytest.approx(0.996), 0.98)
    assert (error.rerun.distance_median, error.rerun.distance_max) == (pytest.approx(0.04), 0.2)
    html = str(render_front(replace(PAGE, error=error)))
    (paragraph,) = re.findall(r'<p class="(\w+)">([^<]*own rerun[^<]*)</p>', html)
    assert paragraph[0] == "pass"
    assert "No rerun" not in html  # the stage's own rerun measured them
    assert "cosine median 0.996" in " ".join(paragraph[1].split())
    assert "largest 0.200" in " ".join(paragraph[1].split())
    far = AttributionError.of(rows, _rerun_vectors([0.999, 0.9, 0.95, 0.995], [0.01, 0.2, 0.3, 0.05]))
    assert 'class="fail">Against the attribute stage' in str(render_front(replace(PAGE, error=far)))
    assert AttributionError.of(rows, vectors.iloc[:0]).rerun is None  # the stage ran without a rerun
    assert "own rerun" not in str(render_front(replace(PAGE, error=AttributionError.of(rows))))


def test_the_front_page_says_whether_the_attribution_found_the_clue() -> None:
    """App. C on the front page: per region the share of questions whose best clue token ranks first, the
    median rank, the clue's share and its difference to control windows with the bootstrap interval (an
    interval reaching zero is marked as a failure); the references are named; no section without a clue."""
    table = pd.DataFrame(
        {
            "region": ["case_text"] * 4 + ["all_text"] * 4,
            "clue_share": [0.8, 0.7, 0.9, 0.6, 0.10, 0.05, 0.20, 0.02],
            "control_mean_share": [0.1, 0.2, 0.1, 0.1, 0.09, 0.10, 0.05, 0.06],
            "best_rank": [1, 1, 2, 1, 3, 1, 9, 12],
        }
    )
    rows = ClueRow.of(localisation_summary(table, 2_000, 0.95, "percentile", 0))
    assert [r.region for r in rows] == ["case_text", "all_text"]
    case, text = rows
    assert (case.questions, case.rank_1_share, case.median_best_rank) == (4, 0.75, 1.0)
    assert case.clue_share_pct == pytest.approx(75.0)
    assert case.difference_pp == pytest.approx(62.5)
    assert 0 < case.ci_low < 62.5 < case.ci_high
    assert text.ci_low < 0 < text.ci_high  # the clue holds no more than text of its length
    page = replace(PAGE, clue=rows, references="1 x 4 train, aligned by token sequence references")
    html = str(render_front(page))
    words = " ".join(" ".join(_parse(html).text).split())
    for fact in (
        "Does the attribution find the clue?",
        "case text",
        "75.0%",
        "62.5",
        "1 x 4 train, aligned by token sequence references",
    ):
        assert fact in words, fact
    verdicts = re.findall(r'<td class="num (pass|fail)">\s*\[', html)
    assert verdicts == ["pass", "fail"]
    assert "find the clue" not in str(render_front(PAGE))


def _verdicts(page: FrontPage) -> dict[str, str]:
    """The verdict line's answers by question, as the page renders them."""
    html = str(render_front(page))
    section = html.split('<section id="verdicts">', 1)[1].split("</section>", 1)[0]
    found = re.findall(r"<span>([^<]+) <b class=\"(?:pass|fail|none)\">([^<]+)</b></span>", section)
    return dict(found)


CLUE = ClueRow("case_text", 8, 1.0, 1.0, 81.0, 73.0, 69.0, 77.0)


def test_the_verdict_line_answers_three_questions_and_each_can_say_no() -> None:
    error = AttributionError("kronrod", 8, 0.0013, 0.0028, 0.009, 340.0, ())
    good = replace(PAGE, accuracy=(AccuracyRow("test", 120, 0.85, 0.25, 0.33),), error=error, clue=(CLUE,))
    assert _verdicts(good) == {
        "Model learned?": "yes",
        "Attribution error within tolerance?": "yes",
        "Clue found?": "yes",
    }
    bad = replace(
        good,
        accuracy=(AccuracyRow("test", 120, 0.30, 0.25, 0.33),),  # below the majority answer
        error=replace(error, residual_median=0.02),  # median R above App. B.4's 0.01
        clue=(replace(CLUE, ci_low=-1.0),),  # the interval reaches zero
    )
    assert set(_verdicts(bad).values()) == {"no"}
    assert (
        _verdicts(replace(good, error=replace(error, budget_ran_out=("q3",), ran_out_residual=(0.002,))))[
            "Attribution error within tolerance?"
        ]
        == "no"
    )
    assert (
        _verdicts(replace(good, error=replace(error, residual_max=0.06)))[
            "Attribution error within tolerance?"
        ]
        == "no"
    )
    assert _verdicts(replace(good, clue=()))["Clue found?"] == "n/a"
    assert _verdicts(replace(good, error=None))["Attribution error within tolerance?"] == "n/a"


GATES = (
    CheckLine("gates_test", "valid_share", 1.0, ">= 1", True),
    CheckLine("gates_test_familiar", "mass_error_with_result", 0.47, "<= 0.2", False),
    CheckLine("gates_test_familiar", "accuracy_with_result", 0.5, ">= 0.8", False),
)


def test_gates_stand_apart_from_the_attribution_checks_and_known_misses_are_labelled() -> None:
    page = replace(
        PAGE,
        checks=PAGE.checks + GATES,
        known_misses=(("mass_error_with_result", "calibration gate, known miss"),),
    )
    html = str(render_front(page))
    checks = html.split('<section id="checks">', 1)[1].split("</section>", 1)[0]
    gates = html.split('<section id="gates">', 1)[1].split("</section>", 1)[0]
    assert "Attribution checks: 1 of 2 passed" in checks
    assert "gates_test" not in checks
    assert "completeness" not in gates
    assert "1 of 3 passed, 1 not expected to pass on this data" in gates
    pattern = r"<td>gates_test\w* · (\w+)</td>.*?<td class=\"(pass|fail|expected)\">([^<]+)</td>"
    rows = re.findall(pattern, gates, re.DOTALL)
    assert rows == [
        ("valid_share", "pass", "pass"),
        ("mass_error_with_result", "expected", "FAIL (not expected to pass)"),
        ("accuracy_with_result", "fail", "FAIL"),  # an unexpected miss stays a plain failure
    ]
    assert "calibration gate, known miss" in gates
    assert 'id="gates"' not in str(render_front(PAGE))  # no gates section without gates


def test_the_positive_controls_calibration_gates_are_its_known_misses_and_no_other_datas() -> None:
    from xurs_pipeline.reporting.gate_notes import known_misses

    names = [name for name, _ in known_misses("synthetic_direct")]
    assert names == ["mass_error_with_result", "mass_error_without_result", "width_error"]
    assert known_misses("synthetic_v2") == ()
    assert known_misses("medqa") == ()


def test_plots_not_drawn_are_listed_with_their_reason() -> None:
    page = replace(PAGE, plots_not_drawn=(Link("surviving total", "", "this head predicts the masses"),))
    text = " ".join(" ".join(_parse(str(render_front(page))).text).split())
    assert "surviving total: not drawn (this head predicts the masses)" in text


def test_reference_endpoints_are_a_diagnostic_apart_from_the_checks() -> None:
    """Eq. 10: per explained answer, which width difference the explanation concerns; the checks' count
    ("n of m passed") does not include them, and no endpoint row reads as a failure."""
    endpoints = pd.DataFrame(
        {
            "case": ["q1:c0", "q2:c1"],
            "delta_natural": [-0.478592, 0.2],
            "delta_aligned": [0.00264, 0.199],
            "shift": [0.481232, 0.001],
            "residual": [1e-5, 2e-5],
            "warn_above": [0.01, 0.01],
            "warning": [True, False],
            "concerns": ["prepared", "natural"],
        }
    )
    rows = EndpointRow.of(endpoints)
    assert [r.concerns for r in rows] == ["prepared", "natural"]
    assert EndpointRow.of(endpoints.drop(columns="concerns")) == rows  # older artifacts: by the flag
    html = str(render_front(replace(PAGE, endpoints=rows)))
    checks = html.split('<section id="checks">', 1)[1].split("</section>", 1)[0]
    section = html.split('<section id="endpoints">', 1)[1].split("</section>", 1)[0]
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section))
    assert "Attribution checks: 1 of 2 passed" in checks  # the endpoints are not counted
    assert "q1:c0" not in checks
    assert "A diagnostic, not a check" in text
    assert "On 1 of 2 explained answers the two differ by more than 0.01" in text
    assert "q1:c0 -0.4786 +0.0026 +0.4812 the prepared reference (Delta aligned)" in text
    assert "q2:c1 +0.2000 +0.1990 +0.0010 both (natural = prepared)" in text
    assert "FAIL" not in section
    assert 'class="fail"' not in section
    assert 'id="endpoints"' not in str(render_front(PAGE))  # no section without aligned references


def test_the_vector_figure_against_each_rerun_is_on_the_front_page_and_can_fail() -> None:
    """App. B.4's vector criteria against a rerun (``attribute_repeats``) beside the residual: passing,
    failing, and said to be unmeasured without a rerun; another configuration's run is not a rerun."""

    def vector(run: str, cosine: float, distance: float) -> tuple[CheckLine, ...]:
        group = f"values_main_vs_{run}"
        cos = CheckLine(group, "median_cosine", cosine, ">= 0.99", cosine >= 0.99)
        return cos, CheckLine(group, "median_relative_distance", distance, "<= 0.1", distance <= 0.10)

    error = AttributionError.of(_attributions([False]))
    checks = PAGE.checks + vector("seed17", 0.9991, 0.021) + vector("seed23", 0.95, 0.31)
    page = replace(PAGE, error=error, checks=checks + vector("attribute_other", 0.1, 0.9))
    assert page.rerun_vectors == (("seed17", 0.9991, 0.021), ("seed23", 0.95, 0.31))
    html = str(render_front(page))
    text = " ".join(" ".join(_parse(html).text).split())
    assert "Against the rerun seed17 (App. B.4's vector criteria): median cosine 0.999" in text
    assert "median relative distance 0.310" in text
    assert re.search(r'class="pass">Against the rerun seed17', html)
    assert re.search(r'class="fail">Against the rerun seed23', html)  # cosine 0.95 < 0.99: must fail
    alone = " ".join(_parse(str(render_front(replace(PAGE, error=error)))).text)
    assert "No rerun: the vector criteria" in " ".join(alone.split())
