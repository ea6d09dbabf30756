"""Two methods side by side on a question page: the tokens they agree on and where they differ, each method
labelled with what the swap control found for it, and those labels equal to docs/swap-control.md's sweep."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from reporting_html_cases import small_view

from xurs_pipeline.reporting.html_explanation import method_comparison, render_explanation
from xurs_pipeline.reporting.html_view import MethodScores
from xurs_pipeline.reporting.method_findings import FINDINGS, SCOPE, finding_label

DOC = Path(__file__).resolve().parents[2] / "docs" / "swap-control.md"


def _pooled_sweep() -> dict[str, tuple[int, int, bool]]:
    """docs/swap-control.md's method x seed table of seeds 5-9 (the findings' source; the held-out seeds of
    the analysis plan have a table of their own): method -> (k, n, passes) of the clear-probe agreement."""
    lines = DOC.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| Method | data.seed=5 |"))
    columns = [c.strip() for c in lines[header].strip("|").split("|")]
    clear, passes = columns.index("Agreement (clear), pooled"), columns.index("Passes")
    out = {}
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        found = re.search(r"\((\d+)/(\d+)\)", cells[clear])
        if found:
            out[cells[0]] = (int(found[1]), int(found[2]), cells[passes] == "yes")
    return out


def test_the_findings_are_the_swap_sweeps_pooled_clear_agreement() -> None:
    table = _pooled_sweep()
    assert {m: (f.k, f.n, f.meets_marks) for m, f in FINDINGS.items()} == {
        ("kronrod" if m == "paper" else m): v for m, v in table.items() if m not in ("input_only", "random")
    }
    assert [m for m, f in FINDINGS.items() if f.meets_marks] == ["occlusion_token"]


def test_a_label_names_its_scope_and_a_method_not_compared_says_so() -> None:
    assert finding_label("occlusion_token").startswith(
        "follows the model on 140 of 149 clear probes: meets the agreement marks"
    )
    assert SCOPE in finding_label("kronrod")
    assert finding_label("eg").startswith("not compared on the swap control")


def _compared():
    view = small_view()
    other = (0.0, 0.0, 0.0, 0.3, 0.0, 0.06, 0.0, 0.0, 0.2, 0.0, 0.12)  # ranks 3, 8, 10, 5 first
    methods = (
        MethodScores("kronrod", finding_label("kronrod"), view.magnitude),
        MethodScores("occlusion_token", finding_label("occlusion_token"), other),
    )
    return view.__class__(**{**view.__dict__, "methods": methods})


def test_the_comparison_lists_the_tokens_both_rank_and_those_only_one_does() -> None:
    comparison = method_comparison(_compared(), k=3)
    assert comparison is not None
    assert [a.position for _, a, _ in comparison.rows] == [6, 10, 5]  # the page's own magnitudes
    assert [b.position for _, _, b in comparison.rows] == [3, 8, 10]
    assert [t.position for t in comparison.agree] == [10]
    assert [[t.position for t in side] for side in comparison.only] == [[6, 5], [3, 8]]
    assert method_comparison(small_view()) is None


def test_the_page_shows_both_methods_with_their_findings() -> None:
    html = render_explanation(_compared(), top_k=3)
    section = html[html.index('<section id="methods">') :]
    section = section[: section.index("</section>")]
    assert "follows the model on 112 of 149 clear probes: below the agreement marks" in section
    assert "follows the model on 140 of 149 clear probes: meets the agreement marks" in section
    assert 'data-agree="1"' in section
    assert '<section id="methods">' not in render_explanation(small_view())


def test_a_comparison_needs_two_methods_of_the_pages_length() -> None:
    view = small_view()
    one = (MethodScores("kronrod", "", view.magnitude),)
    with pytest.raises(ValueError, match="a comparison shows two"):
        view.__class__(**{**view.__dict__, "methods": one})
    short = (*one, MethodScores("grad_l2", "", (0.1,)))
    with pytest.raises(ValueError, match=r"methods\[grad_l2\]\.magnitude"):
        view.__class__(**{**view.__dict__, "methods": short})


def test_a_method_without_a_residual_gets_no_error_verdict_but_says_why() -> None:
    from xurs_pipeline.reporting.front_page import AttributionError, error_verdict

    nan = float("nan")
    none = AttributionError("occlusion_token", 4, nan, nan, nan, 0.0, ())
    verdict = error_verdict(none, (0.01, 0.05))
    assert (verdict.answer, verdict.detail) == ("n/a", "occlusion_token has no completeness residual (Eq. 9)")
    met = AttributionError("kronrod", 4, 0.001, 0.002, 0.003, 30.0, ())
    assert error_verdict(met, (0.01, 0.05)).answer == "yes"
