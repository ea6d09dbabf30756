"""Tables render the artifact frame's numbers, in three formats, with provenance."""

from __future__ import annotations

import re
from html import unescape

import pandas as pd
import pytest

from xurs_pipeline.reporting.render import (
    Column,
    TableSpec,
    fmt_float,
    fmt_interval,
    fmt_verdict,
    write_table,
)

SPEC = TableSpec(
    name="t1",
    macro="EffectRows",
    caption="Mean advantage (Eq. 8)",
    columns=[
        Column("model", "Model", align="l"),
        Column("mean", "Mean advantage", fmt_float(4)),
        Column("ci", "95% CI", fmt_interval(4)),
        Column("ok", "Verdict", fmt_verdict),
    ],
)


def test_three_formats_hold_the_frame_values(tmp_path):
    frame = pd.DataFrame({"model": ["tiny_model"], "mean": [0.038123], "ci": [(0.01, 0.0655)], "ok": [True]})
    md, tex, csv = write_table(frame, SPEC, tmp_path, experiment="smoke", config_hash="abcd")
    text = md.read_text()
    assert "| tiny_model | 0.0381 | [0.0100, 0.0655] | pass |" in text
    assert "experiment smoke, config abcd" in text
    latex = tex.read_text()
    assert r"\newcommand{\EffectRows}" in latex
    assert r"tiny\_model & 0.0381 & [0.0100, 0.0655] & pass\\" in latex
    for fragment in (r"\toprule", r"\bottomrule", r"95\% CI"):
        assert fragment in latex
    back = pd.read_csv(csv)
    assert back.loc[0, "mean"] == pytest.approx(0.038123)
    assert back.loc[0, "config_hash"] == "abcd"


def test_missing_column_is_named(tmp_path):
    with pytest.raises(KeyError, match=r"lacks columns \['ci', 'ok'\]"):
        write_table(pd.DataFrame({"model": ["m"], "mean": [1.0]}), SPEC, tmp_path, "smoke", "x")
    assert list(tmp_path.iterdir()) == []


def test_an_interval_of_fractions_reads_as_percentages() -> None:
    assert fmt_interval(0, percent=True)((0.3006, 0.9494)) == "[30, 95]"
    assert fmt_interval(2)((0.3006, 0.9494)) == "[0.30, 0.95]"
    assert fmt_interval(0, percent=True)((float("nan"), 1.0)) == "[—, 100]"


HOSTILE_ID = "<img src=x onerror=alert(1)>*x* _y_ a_b [l](javascript:z) | `c` \\ &amp; ~~s~~ $5 {t} ^~ #%"


def test_a_record_id_is_shown_literally_in_markdown_and_latex(tmp_path):
    """A record id is data: a Markdown renderer with raw HTML on (GitHub's, CommonMark's) shows it as the
    same text in one cell, and LaTeX gets every special character escaped."""
    from markdown_it import MarkdownIt

    spec = TableSpec(
        "t2", "IdRows", "Ids", [Column("record_id", "Record", align="l"), Column("x", "x", fmt_float(1))]
    )
    md, tex, _ = write_table(pd.DataFrame({"record_id": [HOSTILE_ID], "x": [1.0]}), spec, tmp_path, "e", "h")
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md.read_text())
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html)
    assert [unescape(c) for c in cells] == [HOSTILE_ID, "1.0"]
    table = html[html.index("<table>") : html.index("</table>")]
    for tag in ("<img", "<em>", "<a ", "<code>", "<del>"):
        assert tag not in table
    row = next(line for line in tex.read_text().splitlines() if line.endswith(r"& 1.0\\"))
    body = row.removesuffix(r" & 1.0\\")
    assert not re.search(r"(?<!\\)[$&%#_{}~^]", re.sub(r"\\text\w+\{\}", "", body))
    for char, escaped in (
        ("$", r"\$"),
        ("{", r"\{"),
        ("^", r"\textasciicircum{}"),
        ("~", r"\textasciitilde{}"),
    ):
        assert escaped in body, char


def test_a_name_with_line_breaks_stays_inert_in_every_format(tmp_path):
    """A line break would end the LaTeX footer's ``%`` comment (or a cell's line) and make what follows live
    LaTeX; Markdown would break the table. The config refuses such names (config.py); the renderer keeps
    any that reaches it on one escaped line all the same."""
    hostile = "smoke\n\\input{/etc/hostname}\r\n% x"
    frame = pd.DataFrame({"model": [hostile], "mean": [0.5], "ci": [(0.1, 0.9)], "ok": [True]})
    md, tex, csv = write_table(frame, SPEC, tmp_path, experiment=hostile, config_hash="abcd")
    for line in tex.read_text().splitlines():
        assert not line.lstrip().startswith("\\input"), line  # no live line: inside a comment or escaped
    plain = write_table(frame.assign(model="m"), SPEC, tmp_path / "plain", "smoke", "abcd")[0]
    assert len(md.read_text().splitlines()) == len(plain.read_text().splitlines())
    assert pd.read_csv(csv).loc[0, "experiment"] == hostile  # CSV quotes it and keeps it whole
