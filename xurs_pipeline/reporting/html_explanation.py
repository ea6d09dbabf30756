"""One self-contained HTML page explaining one question's width (inline CSS and SVG, no external assets).

The page shows, top to bottom: the explained answer c and its width; every option's [Bel, Pl] interval
with BetP (Fig. 1, Eq. 1-2); the prompt shaded by signed attribution and again by magnitude (Eq. 3-4,
Sec. 3.4); the non-zero set masses, marking those that make up W_c (Eq. 2); section shares (App. B.3);
the highest-ranked tokens; the checks that apply; provenance. Pure function of an ExplanationView.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from markupsafe import Markup

from xurs_pipeline.credal.focal_sets import FOCAL_SETS
from xurs_pipeline.data.schema import OPTION_LETTERS
from xurs_pipeline.reporting.html_style import CSS
from xurs_pipeline.reporting.html_svg import EXPLAINED_FILL, OTHER_FILL, axis_svg, interval_svg
from xurs_pipeline.reporting.html_templates import environment
from xurs_pipeline.reporting.html_tokens import (
    MARK_STYLES,
    display_texts,
    hidden_count,
    scales,
    token_cells,
    visible,
)
from xurs_pipeline.reporting.html_view import GREYED_SECTIONS, HIDDEN_SECTIONS, CheckRow, ExplanationView

TOP_TOKENS = 10
SPACE_MARK = "␣"  # spaces in the top-token table, so a lone space token is visible
SECTION_LABELS = {
    "template": "template text",
    "question": "question",
    **{f"option_{x}": f"option {x} text" for x in OPTION_LETTERS},
    "option_label": "option labels (A. ... D.)",
    "answer_prefix": "Answer: prefix",
    "special": "special tokens",
    "padding": "padding",
}


def set_label(subset: tuple[int, ...]) -> str:
    """``(1, 2)`` -> ``'{B,C}'``."""
    return "{" + ",".join(OPTION_LETTERS[k] for k in subset) + "}"


@dataclass(frozen=True)
class MassRow:
    label: str
    mass: float
    in_width: bool  # the set holds c and another option: its mass is part of W_c (Eq. 2)

    @property
    def mass_exact(self) -> str:
        return repr(float(self.mass))


def mass_rows(view: ExplanationView) -> tuple[list[MassRow], int, float]:
    """(listed sets sorted by mass, largest first; number left out; their total mass).

    A set is listed when its mass is positive and at least ``view.mass_threshold``; ties keep the
    ``FOCAL_SETS`` order.
    """
    kept, n_dropped, dropped = [], 0, 0.0
    for subset, mass in zip(FOCAL_SETS, view.masses, strict=True):
        if mass > 0 and mass >= view.mass_threshold:
            in_width = view.explained in subset and len(subset) > 1
            kept.append(MassRow(set_label(subset), float(mass), in_width))
        else:
            n_dropped, dropped = n_dropped + (mass > 0), dropped + max(0.0, float(mass))
    kept.sort(key=lambda row: -row.mass)
    return kept, n_dropped, dropped


@dataclass(frozen=True)
class ShareRow:
    name: str
    label: str
    share: float


def share_rows(view: ExplanationView) -> list[ShareRow]:
    """Given section shares, plus the rest of the total (template, labels, special tokens) if any."""
    rows = [ShareRow(name, SECTION_LABELS[name], share) for name, share in view.section_shares]
    rest = 1.0 - sum(share for _, share in view.section_shares)
    if rows and rest > 1e-9:
        rows.append(ShareRow("other", "other positions (template, labels, special)", rest))
    return rows


@dataclass(frozen=True)
class ExplanationCheckLine:
    key: str
    label: str
    value: float
    threshold: float | None
    direction_symbol: str
    verdict: str
    verdict_class: str
    note: str


def check_line(row: CheckRow) -> ExplanationCheckLine:
    verdict, css = {True: ("pass", "pass"), False: ("FAIL", "fail"), None: ("—", "none")}[row.passed]
    symbol = {"<=": "≤", ">=": "≥", "": ""}[row.direction]
    return ExplanationCheckLine(row.key, row.label, row.value, row.threshold, symbol, verdict, css, row.note)


@dataclass(frozen=True)
class OptionRow:
    letter: str
    text: str
    bel: float
    pl: float
    betp: float
    explained: bool
    gold: bool
    svg: Markup


def option_rows(view: ExplanationView) -> list[OptionRow]:
    rows = []
    for k, letter in enumerate(OPTION_LETTERS):
        bel, pl, betp = view.bel[k], view.pl[k], view.betp[k]
        explained = k == view.explained
        svg = interval_svg(letter, bel, pl, betp, explained)
        rows.append(OptionRow(letter, view.options[k], bel, pl, betp, explained, k == view.gold, svg))
    return rows


@dataclass(frozen=True)
class TopToken:
    position: int
    text: str
    section: str
    eligible: bool
    signed: float
    magnitude: float


def top_tokens(view: ExplanationView, k: int = TOP_TOKENS) -> list[TopToken]:
    """The ``k`` drawn tokens of largest magnitude (ties: earlier position first); spaces shown as ␣."""
    texts = display_texts(view.tokens, view.sections, view.token_scheme)
    shaded = [i for i, s in enumerate(view.sections) if s not in GREYED_SECTIONS + HIDDEN_SECTIONS]
    order = sorted(shaded, key=lambda i: (-view.magnitude[i], i))[:k]
    return [
        TopToken(
            i,
            visible(texts[i])[0].replace(" ", SPACE_MARK),
            view.sections[i],
            view.eligible[i],
            view.signed[i],
            view.magnitude[i],
        )
        for i in order
    ]


@dataclass(frozen=True)
class MethodComparison:
    """Two methods' top-k tokens on one question: ``rows`` (rank, first's token, second's token), the
    tokens both rank in their top k (``agree``) and those only one does (``only``, per method)."""

    names: tuple[str, str]
    findings: tuple[str, str]
    rows: list[tuple[int, TopToken, TopToken]]
    agree: list[TopToken]
    only: tuple[list[TopToken], list[TopToken]]


def method_comparison(view: ExplanationView, k: int = TOP_TOKENS) -> MethodComparison | None:
    """The page's two methods side by side (None without a comparison)."""
    if not view.methods:
        return None
    first, second = view.methods
    tops = [top_tokens(replace(view, magnitude=m.magnitude, methods=()), k) for m in (first, second)]
    sets = [{t.position for t in top} for top in tops]
    return MethodComparison(
        (first.method, second.method),
        (first.finding, second.finding),
        [(i + 1, a, b) for i, (a, b) in enumerate(zip(*tops, strict=False))],
        [t for t in tops[0] if t.position in sets[1]],
        tuple([t for t in top if t.position not in sets[1 - j]] for j, top in enumerate(tops)),  # type: ignore
    )


def render_explanation(
    view: ExplanationView, index_href: str | None = "index.html", top_k: int = TOP_TOKENS
) -> str:
    """The HTML page of one explained question; ``index_href`` is the back link (None: no link);
    ``top_k`` tokens in the table of highest-ranked tokens (:func:`top_tokens`)."""
    signed_scale, magnitude_scale = scales(view)
    masses, n_dropped, dropped_total = mass_rows(view)
    heading = view.title or f"Why is answer {view.letter} uncertain? · {view.record_id}"
    return (
        environment()
        .get_template("explanation.html")
        .render(
            page_title=f"XU-RS explanation · {view.record_id}",
            css=CSS,
            heading=heading,
            v=view,
            letters=OPTION_LETTERS,
            index_href=index_href,
            signed_sum=sum(view.signed),
            axis=axis_svg(),
            explained_fill=EXPLAINED_FILL,
            other_fill=OTHER_FILL,
            option_rows=option_rows(view),
            signed_scale=signed_scale,
            magnitude_scale=magnitude_scale,
            signed_cells=token_cells(view, view.signed, signed_scale),
            magnitude_cells=token_cells(view, view.magnitude, magnitude_scale),
            n_hidden=hidden_count(view),
            mass_rows=masses,
            n_dropped=n_dropped,
            dropped_total=dropped_total,
            share_rows=share_rows(view),
            top_rows=top_tokens(view, top_k),
            comparison=method_comparison(view, top_k),
            check_rows=[check_line(row) for row in view.checks],
            mark_styles=MARK_STYLES,
        )
    )
