"""A self-contained HTML heatmap of one explanation: prompt tokens shaded by attribution, option intervals.

Two views of the same prompt: signed token sums (red raises the explained answer's width relative to the
references, blue lowers it) and L2 magnitudes a_i (Sec. 3.4). Below, each option's [Bel, Pl] interval
(Eq. 1) with its width and BetP (Eq. 2). No scripts, no external files.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xurs_pipeline.attribution.explain import Explanation

LETTERS = "ABCD"
STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;color:#222}
.prompt{white-space:pre-wrap;line-height:1.9;border:1px solid #ddd;padding:.8rem;border-radius:6px}
.prompt span{border-radius:3px;padding:1px 0}
.muted{color:#888}
table{border-collapse:collapse;margin:.5rem 0}td,th{padding:.25rem .6rem;text-align:right}
td:first-child,th:first-child{text-align:left}
.bar{position:relative;width:16rem;height:.8rem;background:#eee;border-radius:3px}
.bar div{position:absolute;top:0;height:100%;background:#6a5acd;border-radius:3px}
.legend span{display:inline-block;padding:0 .5rem;margin-right:.3rem;border-radius:3px}
"""


def _shade(value: float, scale: float, signed: bool) -> str:
    strength = 0.0 if scale <= 0 else min(1.0, abs(value) / scale)
    rgb = "214,39,40" if (value >= 0 or not signed) else "31,119,180"
    if not signed:
        rgb = "106,90,205"
    return f"background:rgba({rgb},{strength:.3f})"


def _tokens(expl: Explanation, values: Sequence[float], signed: bool) -> str:
    scale = max((abs(v) for v in values), default=0.0)
    spans = []
    for i, (text, value) in enumerate(zip(expl.tokens, values, strict=True)):
        tip = (f"#{i} {expl.sections[i]} | magnitude {expl.token_magnitude[i]:.3g} | "
               f"signed {expl.token_signed[i]:+.3g}")  # fmt: skip
        css = _shade(value, scale, signed)
        cls = "" if expl.eligible[i] else ' class="muted"'
        spans.append(f'<span{cls} style="{css}" title="{html.escape(tip)}">{html.escape(text)}</span>')
    return "".join(spans)


def _options(expl: Explanation) -> str:
    rows = []
    for k, text in enumerate(expl.options):
        bel, pl = expl.belief[k], expl.plausibility[k]
        mark = " (explained)" if k == expl.target else ""
        mark += " (predicted)" if k == expl.predicted else ""
        bar = (
            f'<div class="bar"><div style="left:{100 * bel:.2f}%;width:{100 * (pl - bel):.2f}%"></div></div>'
        )
        rows.append(
            f"<tr><td>{LETTERS[k]}. {html.escape(text)}{mark}</td><td>[{bel:.4f}, {pl:.4f}]</td>"
            f"<td>{expl.width[k]:.4f}</td><td>{expl.betp[k]:.4f}</td><td>{bar}</td></tr>"
        )
    return ("<table><tr><th>Option</th><th>[Bel, Pl]</th><th>Width</th><th>BetP</th><th></th></tr>"
            + "".join(rows) + "</table>")  # fmt: skip


def render(expl: Explanation) -> str:
    """The whole HTML page as a string."""
    letter = LETTERS[expl.target]
    summary = (
        f"Width of answer {letter}: {expl.width[expl.target]:.4f}; mean reference width "
        f"{expl.width_input - expl.width_difference:.4f}; signed attributions sum to {expl.signed_sum:+.4f} "
        f"(completeness residual R = {expl.residual:.2e}, Eq. 9). {expl.method.upper()}, {expl.reference} "
        f"references, {expl.grad_evals} gradient evaluations, {expl.precision}."
    )
    legend = ('<p class="legend"><span style="background:rgba(214,39,40,.6)">raises width</span>'
              '<span style="background:rgba(31,119,180,.6)">lowers width</span>'
              '<span class="muted">grey text: not eligible (Sec. 5.2)</span></p>')  # fmt: skip
    title = html.escape(expl.record_id)
    signed = _tokens(expl, expl.token_signed, True)
    magnitude = _tokens(expl, expl.token_magnitude, False)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>XU-RS: {title}</title>"
        f"<style>{STYLE}</style></head><body><h1>Credal width attribution: {title}</h1>"
        f"<p>{html.escape(summary)}</p>{_options(expl)}"
        f"<h2>Signed token contributions</h2>{legend}<div class='prompt'>{signed}</div>"
        f"<h2>Token magnitudes a<sub>i</sub></h2><div class='prompt'>{magnitude}</div></body></html>"
    )
