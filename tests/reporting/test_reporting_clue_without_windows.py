"""The front page when the localisation has no clue-free control window (aligned paired references leave only
the clue live: `local`'s checks write None for the difference and its interval)."""

from __future__ import annotations

import math

from reporting_html_cases import bare_front

from xurs_pipeline.reporting.front_page import ClueRow, clue_verdict, render_front

# checks.json's localisation as the `local` experiment writes it (every live position is a clue position)
NO_WINDOWS = {
    region: {
        "questions": 24,
        "best_rank_1_share": 1.0,
        "median_best_rank": 1.0,
        "mean_clue_share_pct": 100.0,
        "mean_difference_pp": None,
        "ci_low": None,
        "ci_high": None,
        "base_rate_rank_1": 1.0,
        "questions_with_windows": 0,
    }
    for region in ("all_text", "case_text")
}


def test_missing_windows_render_as_dashes_and_the_verdict_says_why() -> None:
    rows = ClueRow.of(NO_WINDOWS)
    assert math.isnan(rows[0].ci_low)
    verdict = clue_verdict(rows, by_construction=True)
    assert verdict.answer == "no"
    assert "no clue-free control window" in verdict.detail
    page = bare_front(experiment="local", clue=rows, clue_by_construction=True)
    html = str(render_front(page))
    assert "[—, —]" in html
    assert "nan" not in html.lower().replace("nan ", "")  # no raw NaN printed
    with_windows = {**NO_WINDOWS["case_text"], "mean_difference_pp": 20.0, "ci_low": 12.0, "ci_high": 28.0}
    assert clue_verdict(ClueRow.of({"case_text": with_windows}), by_construction=False).answer == "yes"
