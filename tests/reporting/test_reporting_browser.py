"""Each browser check of tests/browser_checks.py passes on a small rendered report and fails on a copy
broken on purpose: a page that throws, a sort that does nothing, a link to a missing file, an element wider
than the viewport, an empty and a blank plot. (The smoke run's report itself: tests/pipeline/.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser_checks import (
    broken_links,
    console_errors,
    empty_images,
    overflowing,
    sort_is_broken,
)
from reporting_html_cases import masses_of, measures, small_view

from xurs_pipeline.reporting import plots
from xurs_pipeline.reporting.build_report import build_report
from xurs_pipeline.reporting.front_page import AccuracyRow, CheckLine, EffectRow, FrontPage, Link

TABLE = "**Table 1.**\n\n| target | questions | a long column heading " + "x" * 60 + " |\n|---|---:|---|\n"
TABLE += "| width | 3 | " + "y" * 200 + " |\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small report as the pipeline writes it: front page with a plot, a table page, three questions."""
    root = tmp_path_factory.mktemp("browser")
    plots.advantage_per_question(np.array([0.1, -0.05, 0.2]), (0.0, 0.2), root / "plots" / "advantage.png")
    m = masses_of({(1,): 0.3, (1, 2): 0.6})
    bel, pl, betp = measures(m)
    views = [
        small_view(record_id="q1"),
        small_view(record_id="q2", masses=m, bel=bel, pl=pl, betp=betp, explained=1),
        small_view(record_id="q3", reference_width=0.2),
    ]
    front = FrontPage(
        experiment="fixture",
        model="tiny",
        data="synthetic",
        config_hash="abc",
        accuracy=(AccuracyRow("test", 3, 0.67, 0.25, 0.33),),
        effects=(EffectRow("width", 3, 0.08, 0.01, 0.15),),
        checks=(CheckLine("completeness", "max_residual", 0.004, "<= 0.05", True),),
        tables=(Link("table1_effects", "tables/table1_effects.html", "Table 1"),),
        skipped=(),
        plots=(Link("advantage", "../plots/advantage.png", "A(x) per question"),),
    )
    build_report(views, root / "html", "fixture", front, {"table1_effects": TABLE})
    return root / "html"


def _broken(report: Path, tmp_path: Path, old: str, new: str, name: str = "index.html") -> Path:
    """A copy of ``report`` whose page ``name`` has ``old`` replaced by ``new`` (which must occur)."""
    import shutil

    copy = tmp_path / "html"
    shutil.copytree(report, copy)
    shutil.copytree(report.parent / "plots", tmp_path / "plots")
    text = (copy / name).read_text()
    assert old in text, old
    (copy / name).write_text(text.replace(old, new, 1))
    return copy


def test_console_errors_catches_a_page_that_throws(report, chromium, tmp_path):
    assert console_errors(chromium, report / "index.html") == []
    broken = _broken(report, tmp_path, "</main>", "<script>undefinedFunction();</script></main>")
    assert any("undefinedFunction" in e for e in console_errors(chromium, broken / "index.html"))


def test_sort_check_catches_a_heading_that_does_not_sort(report, chromium, tmp_path):
    assert sort_is_broken(chromium, report / "index.html") == []
    broken = _broken(report, tmp_path, "rows.sort(", "rows.slice(")  # the click no longer sorts
    assert sort_is_broken(chromium, broken / "index.html")


def test_link_check_catches_a_missing_page_and_a_missing_image(report, chromium, tmp_path):
    assert broken_links(chromium, report / "index.html") == []
    broken = _broken(report, tmp_path, 'href="q2.html"', 'href="q2-gone.html"')
    (broken.parent / "plots" / "advantage.png").unlink()
    problems = broken_links(chromium, report / "index.html", broken / "index.html")  # one tab, in turn
    assert any("q2-gone.html" in p for p in problems)
    assert any("advantage.png" in p for p in problems)


def test_overflow_check_catches_an_element_wider_than_the_viewport(report, chromium, tmp_path):
    for page in ("index.html", "q1.html", "tables/table1_effects.html"):
        assert overflowing(chromium, report / page) == [], page
    broken = _broken(report, tmp_path, "<main>", '<main><div id="wide" style="width: 1400px">x</div>')
    assert any("div#wide" in p for p in overflowing(chromium, broken / "index.html"))
    # a wide table the stylesheet does not let scroll sticks out too
    no_scroll = "section, .md-table { overflow-x: visible; }</style>"
    unscrolled = _broken(report, tmp_path / "b", "</style>", no_scroll, "tables/table1_effects.html")
    assert overflowing(chromium, unscrolled / "tables" / "table1_effects.html")


def test_image_check_catches_an_empty_and_a_blank_plot(report, chromium, tmp_path):
    assert empty_images(chromium, report / "index.html") == []
    broken = _broken(report, tmp_path, "</main>", '<img src="../plots/blank.png" alt="blank"></main>')
    plots_dir = broken.parent / "plots"
    import matplotlib.pyplot as plt

    plt.imsave(plots_dir / "blank.png", np.ones((20, 30, 3)))  # one colour: nothing drawn
    assert [p for p in empty_images(chromium, broken / "index.html") if "blank.png is blank" in p]
    (plots_dir / "advantage.png").write_bytes(b"")  # an empty file does not decode
    assert [p for p in empty_images(chromium, broken / "index.html") if "did not decode" in p]
