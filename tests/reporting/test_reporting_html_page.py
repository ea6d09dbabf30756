"""One explanation page: tokens in order, colours by attribution, [Bel, Pl] bars, masses, escaping."""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from reporting_html_cases import (
    OPTIONS,
    QUESTION,
    masses_of,
    measures,
    medqa_like_view,
    parse,
    small_view,
)

from xurs_pipeline.data.prompt import format_prompt
from xurs_pipeline.models.tiny import train_tiny_tokenizer
from xurs_pipeline.reporting.html import render_explanation
from xurs_pipeline.reporting.html_svg import EXPLAINED_FILL, OTHER_FILL

# The small view's tokens as a reader sees them: Ġ -> space, Ċ -> ↵ (and a line break), padding hidden.
SMALL_VISIBLE = ["<|bos|>", "Question", ":", " <script>", " fever", "↵", "A", ".", " cough"]


@pytest.fixture(scope="module")
def medqa_view():
    tokenizer = train_tiny_tokenizer([QUESTION, *OPTIONS, "Question: Answer:"] * 2, vocab_size=400)
    return medqa_like_view(tokenizer), tokenizer


def _tokens(page: str, view_name: str):
    (container,) = parse(page).find("div", data_view=view_name)
    return [n for n in container.iter("span") if "tok" in n.attrs["class"].split()]


def _rgb(style: str) -> tuple[int, int, int]:
    hexa = re.search(r"background-color: #([0-9a-f]{6})", style).group(1)
    return tuple(int(hexa[i : i + 2], 16) for i in (0, 2, 4))


def _intensity(rgb: tuple[int, int, int]) -> float:
    """Distance from white (0 for white, larger for stronger colour), for colours of one hue."""
    return sum(255 - c for c in rgb)


def _lightness(rgb: tuple[int, int, int]) -> float:
    """CIE L* of an sRGB colour (100 white, 0 black): how light it looks, whatever its hue."""
    linear = [(c / 255 / 12.92) if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    y = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 116 * y ** (1 / 3) - 16 if y > 216 / 24389 else y * 24389 / 27


@pytest.mark.parametrize("view_name", ["signed", "magnitude"])
def test_every_token_appears_once_in_order(view_name):
    spans = _tokens(render_explanation(small_view()), view_name)
    assert [s.all_text() for s in spans] == SMALL_VISIBLE


def test_display_text_of_a_real_byte_level_prompt_rebuilds_it(medqa_view):
    """Byte-level pieces ('Ġ', 'Ċ', split UTF-8) shown one by one still read as the prompt itself."""
    view, _ = medqa_view
    spans = _tokens(render_explanation(view), "signed")
    shown = "".join(s.all_text() for s in spans if "special" not in s.attrs["class"])
    assert shown == format_prompt(QUESTION, OPTIONS).text.replace("\n", "↵")
    assert "39.2°C" in shown
    assert any("Ġ" in t for t in view.tokens)


def test_stronger_attribution_gets_stronger_colour_and_sign_picks_the_hue(medqa_view):
    view, _ = medqa_view
    page = render_explanation(view)
    shaded = [i for i, s in enumerate(view.sections) if s not in ("special", "padding")]
    spans = [s for s in _tokens(page, "signed") if "special" not in s.attrs["class"]]
    assert len(spans) == len(shaded)
    colours = {i: _rgb(s.attrs["style"]) for i, s in zip(shaded, spans, strict=True)}
    for sign in (-1, 1):  # one hue: strictly ordered (up to 8-bit rounding)
        same = sorted((i for i in shaded if sign * view.signed[i] > 0), key=lambda i: abs(view.signed[i]))
        for a, b in itertools.pairwise(same):
            assert _lightness(colours[b]) <= _lightness(colours[a]) + 0.5, (view.signed[a], view.signed[b])
    # Across hues (red and blue are not equally light in any palette): 20% larger is never lighter.
    for a, b in itertools.product(shaded, shaded):
        if abs(view.signed[b]) > 1.2 * abs(view.signed[a]):
            assert _lightness(colours[b]) < _lightness(colours[a]) + 0.5, (view.signed[a], view.signed[b])
    strongest = max(shaded, key=lambda i: abs(view.signed[i]))
    assert _lightness(colours[strongest]) < 25  # the page maximum gets the full colour
    for i in shaded:
        r, _, b = colours[i]
        if view.signed[i] < -1e-3:
            assert b > r, (i, view.signed[i], colours[i])
        elif view.signed[i] > 1e-3:
            assert r > b, (i, view.signed[i], colours[i])


def test_magnitude_view_is_monotone_and_zero_is_white():
    view = small_view()
    spans = _tokens(render_explanation(view), "magnitude")
    drawn = [i for i, s in enumerate(view.sections) if s != "padding"]
    pairs = [
        (view.magnitude[i], _intensity(_rgb(s.attrs["style"])))
        for i, s in zip(drawn, spans, strict=True)
        if view.sections[i] != "special"
    ]
    pairs.sort()
    assert [p[1] for p in pairs] == sorted(p[1] for p in pairs)
    zero_signed = _tokens(render_explanation(small_view(signed=(0.0,) * 11)), "signed")
    shaded = [s for s in zero_signed if "special" not in s.attrs["class"]]
    assert {_rgb(s.attrs["style"]) for s in shaded} == {(255, 255, 255)}


def test_tooltips_give_exact_values_and_section():
    view = small_view()
    spans = _tokens(render_explanation(view), "signed")
    drawn = [i for i, s in enumerate(view.sections) if s != "padding"]
    for i, span in zip(drawn, spans, strict=True):
        title = span.attrs["title"]
        assert f"#{i} " in title
        assert f"section {view.sections[i]}" in title
        assert float(re.search(r"signed (\S+)", title).group(1)) == view.signed[i]
        assert float(re.search(r"magnitude (\S+)", title).group(1)) == view.magnitude[i]
    assert "not eligible" in spans[1].attrs["title"]
    assert "· eligible" in spans[4].attrs["title"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interval_bars_span_exactly_bel_to_pl(seed):
    torch.manual_seed(seed)
    masses = torch.distributions.Dirichlet(torch.full((15,), 0.4)).sample().double()
    masses = tuple((masses / masses.sum()).tolist())
    bel, pl, betp = measures(masses)
    c = max(range(4), key=lambda k: betp[k])
    page = parse(render_explanation(small_view(masses=masses, bel=bel, pl=pl, betp=betp, explained=c)))
    for k, letter in enumerate("ABCD"):
        (row,) = page.find("tr", data_option=letter)
        (track,) = row.find("line", class_="track")
        (bar,) = row.find("rect", class_="interval")
        x0, x1 = float(track.attrs["x1"]), float(track.attrs["x2"])
        lo = (float(bar.attrs["x"]) - x0) / (x1 - x0)
        hi = (float(bar.attrs["x"]) + float(bar.attrs["width"]) - x0) / (x1 - x0)
        assert lo == pytest.approx(bel[k], abs=1e-5)
        assert hi == pytest.approx(pl[k], abs=1e-5)
        assert bar.attrs["fill"] == (EXPLAINED_FILL if k == c else OTHER_FILL)
        assert ("explained" in row.attrs["class"]) == (k == c)


def test_paper_example_interval_of_c():
    """Sec. 1 / Fig. 1: m({B}) = m({C}) = 0.1, m({B,C}) = 0.8 gives C the interval [0.1, 0.9], width 0.8."""
    page = render_explanation(small_view())
    (bar,) = parse(page).find("rect", data_option="C")
    assert (float(bar.attrs["x"]), float(bar.attrs["width"])) == pytest.approx((12 + 0.1 * 296, 0.8 * 296))
    assert "= <b>0.8000</b>" in page


def test_masses_below_threshold_are_dropped_and_the_rest_kept_exactly():
    masses = masses_of({(0,): 0.5, (1,): 0.0004, (1, 2): 0.3, (0, 1, 3): 0.0009, (2,): 0.001})
    bel, pl, betp = measures(masses)
    view = small_view(masses=masses, bel=bel, pl=pl, betp=betp, explained=0, mass_threshold=1e-3)
    page = render_explanation(view)
    rows = [n for n in parse(page).iter("tr") if "data-set" in n.attrs]
    listed = [(r.attrs["data-set"], float(r.attrs["data-mass"])) for r in rows]
    expected = {"{A}": 0.5, "{B,C}": 0.3, "{C}": 0.001, "{A,B,C,D}": masses[-1]}
    assert dict(listed) == pytest.approx(expected)
    assert [m for _, m in listed] == sorted((m for _, m in listed), reverse=True)
    assert sum(m for _, m in listed) + 0.0004 + 0.0009 == pytest.approx(sum(masses), abs=1e-12)
    (card,) = parse(page).find("section", id="masses")
    assert "2 sets below 0.001 are not listed (together 0.0013)" in " ".join(card.all_text().split())
    # Eq. 2: of the listed sets, only {A,B,C,D} holds A together with another option.
    assert {r.attrs["data-set"] for r in rows if "→" in r.all_text()} == {"{A,B,C,D}"}


def test_text_is_escaped_everywhere():
    view = small_view(record_id='r"<1>&', options=("cough", "fever & rash", "<i>C</i>", "</td>"))
    page = render_explanation(view)
    tree = parse(page)  # balanced tags: no option text closed a cell
    assert not tree.find("script")
    assert not tree.find("i")
    assert "<script" not in page
    for escaped in ("&lt;script&gt;", "&lt;i&gt;C&lt;/i&gt;", "&lt;/td&gt;", "r&#34;&lt;1&gt;&amp;"):
        assert escaped in page
    ((title,),) = [head.find("title") for head in tree.find("head")]
    assert title.all_text() == 'XU-RS explanation · r"<1>&'
    token = next(s for s in _tokens(page, "signed") if "script" in s.all_text())
    assert token.all_text() == " <script>"
    assert "'Ġ<script>'" in token.attrs["title"]


def test_page_is_self_contained():
    page = render_explanation(small_view())
    tree = parse(page)
    for tag in ("link", "img", "script", "iframe", "object"):
        assert not tree.find(tag)
    assert {a.attrs["href"] for a in tree.find("a")} == {"index.html"}
    assert not re.search(r"\b(src|url)\s*[=(]", page)
    assert not parse(render_explanation(small_view(), index_href=None)).find("a")


def test_marked_spans_are_outlined_with_their_labels_in_both_heatmaps():
    """The clue (and, on a two-cue record, each cue) is outlined in both views and named in the key; the
    positions the marks do not hold stay unmarked."""
    from xurs_pipeline.reporting.html_view import Mark

    view = small_view(marks=(Mark("clue", (5, 6)), Mark("second cue", (10,))))
    page = render_explanation(view)
    drawn = [i for i, s in enumerate(view.sections) if s != "padding"]
    for name in ("signed", "magnitude"):
        spans = _tokens(page, name)
        marked = {i: span.attrs.get("data-mark") for i, span in zip(drawn, spans, strict=True)}
        assert marked == {i: {5: "clue", 6: "clue", 10: "second cue"}.get(i) for i in drawn}
        classes = {i: span.attrs["class"].split() for i, span in zip(drawn, spans, strict=True)}
        assert "mark-0" in classes[5]
        assert "mark-1" in classes[10]
        assert "mark" not in classes[3]
    words = " ".join(" ".join(parse(page).all_text().split()).split())
    assert "outlined: clue (2 tokens)" in words
    assert "outlined: second cue (1 token)" in words
    assert "outlined:" not in render_explanation(small_view())  # nothing marked: no key


@pytest.mark.parametrize(
    ("marks", "message"),
    [
        ((("clue", (5, 11)),), "outside the prompt"),
        ((("clue", (5,)), ("clue", (6,))), "distinct"),
        (((" ", (5,)),), "non-empty"),
    ],
)
def test_marks_outside_the_prompt_or_with_duplicate_labels_are_refused(marks, message):
    from xurs_pipeline.reporting.html_view import Mark

    with pytest.raises(ValueError, match=message):
        small_view(marks=tuple(Mark(label, positions) for label, positions in marks))


def test_marks_come_from_the_prepared_prompts_labelled_columns():
    import numpy as np
    import pandas as pd

    from xurs_pipeline.reporting.build_report import marks_of
    from xurs_pipeline.reporting.html_view import Mark

    assert marks_of(pd.Series({"clue_positions": np.array([3, 4])})) == (Mark("clue", (3, 4)),)
    assert marks_of(pd.Series({"clue_positions": np.array([], dtype=int)})) == ()  # no clue: nothing marked
    assert marks_of(pd.Series({"question": "MedQA has no clue column"})) == ()
    two_cues = pd.Series({"cue_a": [1, 2], "cue_b": np.array([7])})
    assert marks_of(two_cues, (("cue_a", "cue A"), ("cue_b", "cue B"))) == (
        Mark("cue A", (1, 2)), Mark("cue B", (7,))
    )
    # the swap control's prompts: both cues, not the clue (cue 1 under model A only)
    swap = pd.Series({"clue_positions": np.array([3, 4]), "cue_positions": np.array(
        [np.array([3, 4]), np.array([9, 10, 11])], dtype=object)})
    assert marks_of(swap) == (Mark("cue 1", (3, 4)), Mark("cue 2", (9, 10, 11)))
