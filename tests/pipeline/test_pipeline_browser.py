"""The smoke run's report in a real browser (headless Chromium, tests/browser_checks.py): the front page and
a question page run without console errors, a click on a heading sorts the explanation table, every local
link and image resolves, nothing sticks out at 900 px, every plot is a decoded, non-blank image.
(tests/reporting/test_reporting_browser.py shows each check failing on a page broken on purpose.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_checks import (
    broken_links,
    console_errors,
    empty_images,
    overflowing,
    report_pages,
    sort_is_broken,
)

pytestmark = pytest.mark.slow  # the first to use the session's smoke project may build it (dvc repro)


@pytest.fixture(scope="module")
def report(smoke_project: Path) -> Path:
    html = smoke_project / "results" / "html"
    assert (html / "index.html").is_file()
    return html


def _question_page(report: Path) -> Path:
    return next(p for p in sorted(report.glob("*.html")) if p.name != "index.html")


def test_front_page_and_a_question_page_run_without_console_errors(report, chromium):
    for page in (report / "index.html", _question_page(report)):
        assert console_errors(chromium, page) == [], page.name


def test_clicking_a_heading_sorts_the_explanation_table(report, chromium):
    assert sort_is_broken(chromium, report / "index.html") == []


def test_every_local_link_and_image_of_every_page_resolves(report, chromium):
    pages = report_pages(report)
    assert len(pages) >= 3  # front page, table pages, question pages
    assert broken_links(chromium, *pages) == []


def test_nothing_overflows_the_viewport_at_900_px(report, chromium):
    table = sorted((report / "tables").glob("*.html"))[0]
    for page in (report / "index.html", _question_page(report), table):
        assert overflowing(chromium, page) == [], page.name


def test_every_plot_on_the_front_page_is_a_decoded_non_blank_image(report, chromium):
    assert empty_images(chromium, report / "index.html") == []
    assert "<img" in (report / "index.html").read_text()  # there are plots to check
