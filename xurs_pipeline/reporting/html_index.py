"""The index page: one row per explained question, linking its page, widest first.

Rows are ordered by width (largest first) in the HTML itself, so the page reads well without script;
a few lines of inline script, when enabled, let a click on a column heading re-sort the table.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from xurs_pipeline.reporting.html_style import CSS
from xurs_pipeline.reporting.html_templates import environment
from xurs_pipeline.reporting.html_view import ADVANTAGE_CHECK, RESIDUAL_CHECK, ExplanationView

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

SORT_SCRIPT = Markup(
    """
(function () {
  var table = document.getElementById("index-table");
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var desc = !th.classList.contains("sorted-desc");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (r) {
        var s = r.cells[col].getAttribute("data-sort");
        return th.getAttribute("data-kind") === "num" ? (s === "" ? -Infinity : parseFloat(s)) : s;
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
      Array.prototype.forEach.call(heads, function (h) { h.classList.remove("sorted-desc", "sorted-asc"); });
      th.classList.add(desc ? "sorted-desc" : "sorted-asc");
    });
  });
})();
"""
)


def page_name(record_id: str) -> str:
    """File name of a record's page: the id with unsafe characters replaced, plus a short hash of the
    id when anything was replaced (so distinct ids never share a file)."""
    safe = _UNSAFE.sub("_", record_id)
    safe = "_" + safe[1:] if safe.startswith(".") else safe  # no hidden files, no "..": ids are not paths
    if safe != record_id or not safe.strip("._"):
        safe = f"{safe}-{hashlib.sha256(record_id.encode()).hexdigest()[:8]}"
    return f"{safe}.html"


@dataclass(frozen=True)
class IndexEntry:
    """One index row; residual and advantage are None when the question has no such check."""

    record_id: str
    href: str
    letter: str
    width: float
    residual: float | None
    advantage: float | None
    verdict: str  # "pass", "FAIL" or "—" (no check with a verdict)
    checks: str = ""  # which checks: the failed ones if any failed, else those that passed


def index_entry(view: ExplanationView, href: str | None = None) -> IndexEntry:
    """The index row of a view: W_c (Eq. 2), residual R (Eq. 9), advantage A(x) (Eq. 8), overall verdict.

    The verdict is FAIL if any check failed, pass if at least one passed and none failed, else "—".
    """
    verdicts = [row.passed for row in view.checks if row.passed is not None]
    verdict = "FAIL" if False in verdicts else ("pass" if verdicts else "—")
    named = [row.label for row in view.checks if row.passed is (verdict == "pass")]
    residual, advantage = view.check(RESIDUAL_CHECK), view.check(ADVANTAGE_CHECK)
    return IndexEntry(
        record_id=view.record_id,
        href=href if href is not None else page_name(view.record_id),
        letter=view.letter,
        width=view.width,
        residual=None if residual is None else residual.value,
        advantage=None if advantage is None else advantage.value,
        verdict=verdict,
        checks="; ".join(named) if verdict != "—" else "",
    )


def render_index(
    entries: Sequence[IndexEntry],
    title: str = "XU-RS explanations",
    subtitle: str = "",
    scripted: bool = True,
    front: Markup | None = None,
) -> str:
    """The index page linking every entry's page, rows by width (largest first, then record id);
    ``front`` (the report's front-page sections, ``front_page.render_front``) goes above the list."""
    ordered = sorted(entries, key=lambda e: (-e.width, e.record_id))
    return (
        environment()
        .get_template("index.html")
        .render(
            page_title=title,
            heading=title,
            subtitle=subtitle,
            css=CSS,
            entries=ordered,
            scripted=scripted,
            front=front,
            sort_script=SORT_SCRIPT,
            verdict_class=lambda verdict: {"pass": "pass", "FAIL": "fail"}.get(verdict, "none"),
        )
    )
