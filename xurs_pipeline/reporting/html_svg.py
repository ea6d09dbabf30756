"""Inline SVG of one option's [Bel, Pl] interval on a 0..1 axis (the paper's Fig. 1, right panel).

Every row shares one scale: x = X0 + p (X1 - X0) for a probability p. The bar spans exactly
[Bel({k}), Pl({k})] (Eq. 1), so its length is the credal width W_k (Eq. 2); dots mark both ends and a
thin dark tick marks BetP(k). The explained answer is drawn dark, the others light. Only numbers are
written into the SVG, so nothing in it needs escaping.
"""

from __future__ import annotations

from markupsafe import Markup

WIDTH = 320.0  # SVG user units (px)
HEIGHT = 26.0
X0, X1 = 12.0, 308.0  # where probability 0 and 1 sit
MID = HEIGHT / 2
BAR_HALF = 6.0
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
EXPLAINED_FILL = "#1c3d8c"  # Fig. 1's blue!65!black
OTHER_FILL = "#9db3dd"
BETP_STROKE = "#d9480f"


def x_of(p: float) -> float:
    """Horizontal coordinate of probability ``p`` (clipped to [0, 1] against rounding)."""
    return X0 + min(1.0, max(0.0, p)) * (X1 - X0)


def _n(value: float) -> str:
    return f"{value:.3f}"


def interval_svg(letter: str, bel: float, pl: float, betp: float, explained: bool) -> Markup:
    """One option's row: track, grid, [Bel, Pl] bar with end dots, BetP tick. (letter is A..D)"""
    fill = EXPLAINED_FILL if explained else OTHER_FILL
    lo, hi, mid = x_of(bel), x_of(pl), x_of(betp)
    grid = "".join(
        f'<line class="grid" x1="{_n(x_of(t))}" y1="3" x2="{_n(x_of(t))}" y2="{_n(HEIGHT - 3)}" '
        'stroke="#e3e3e3" stroke-width="1"/>'
        for t in TICKS
    )
    parts = [
        f'<svg class="interval-svg" xmlns="http://www.w3.org/2000/svg" width="{WIDTH:g}" '
        f'height="{HEIGHT:g}" viewBox="0 0 {WIDTH:g} {HEIGHT:g}" role="img">',
        f"<title>{letter}: Bel {bel:.4f}, Pl {pl:.4f}, width {pl - bel:.4f}, BetP {betp:.4f}</title>",
        grid,
        f'<line class="track" x1="{_n(X0)}" y1="{_n(MID)}" x2="{_n(X1)}" y2="{_n(MID)}" '
        'stroke="#9a9a9a" stroke-width="1"/>',
        f'<rect class="interval" data-option="{letter}" x="{_n(lo)}" y="{_n(MID - BAR_HALF)}" '
        f'width="{_n(hi - lo)}" height="{_n(2 * BAR_HALF)}" rx="2" fill="{fill}"/>',
        f'<circle class="bel" cx="{_n(lo)}" cy="{_n(MID)}" r="3.2" fill="{fill}" stroke="#ffffff"/>',
        f'<circle class="pl" cx="{_n(hi)}" cy="{_n(MID)}" r="3.2" fill="{fill}" stroke="#ffffff"/>',
        f'<line class="betp" x1="{_n(mid)}" y1="{_n(MID - BAR_HALF - 3)}" x2="{_n(mid)}" '
        f'y2="{_n(MID + BAR_HALF + 3)}" stroke="{BETP_STROKE}" stroke-width="2"/>',
        "</svg>",
    ]
    return Markup("".join(parts))


def axis_svg() -> Markup:
    """Tick labels of the shared 0..1 axis, aligned with :func:`interval_svg`."""
    labels = "".join(
        f'<text x="{_n(x_of(t))}" y="14" text-anchor="middle" font-size="11" fill="#555">{t:g}</text>'
        for t in TICKS
    )
    return Markup(
        f'<svg class="axis-svg" xmlns="http://www.w3.org/2000/svg" width="{WIDTH:g}" height="18" '
        f'viewBox="0 0 {WIDTH:g} 18">{labels}</svg>'
    )
