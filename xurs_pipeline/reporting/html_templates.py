"""Jinja2 templates of the report pages, autoescaped: every text from data is HTML-escaped."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

from jinja2 import DictLoader, Environment, StrictUndefined

BASE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="xurs_pipeline.reporting">
<title>{{ page_title }}</title>
<style>{{ css }}</style>
</head>
<body>
<main>
{% block body %}{% endblock %}
</main>
</body>
</html>
"""

LEGEND = """{% macro legend(scale_css, low, mid, high, caption) -%}
<div class="legend"><span>{{ low }}</span><span class="bar" style="background: {{ scale_css }}"></span>
<span>{{ high }}</span><span>({{ mid }})</span><span>{{ caption }}</span></div>
{%- endmacro %}
{% macro heatmap(cells, view_name) -%}
<div class="heatmap" id="{{ view_name }}" data-view="{{ view_name }}">
{%- for c in cells -%}
<span class="{{ c.css_class }}"{% if c.mark %} data-mark="{{ c.mark }}"{% endif %}
 style="background-color: {{ c.background }}; color: {{ c.colour }}" title="{{ c.tooltip }}">
{{- c.text -}}
</span>{% for _ in range(c.breaks) %}<br>{% endfor %}
{%- endfor -%}
</div>
{%- endmacro %}
{% macro row(cells, numeric) -%}
<tr>{% for cell in cells %}<th{% if loop.index0 in numeric %} class="num"{% endif %}>{{ cell }}</th>
{%- endfor %}</tr>
{%- endmacro %}
"""

EXPLANATION = """{% extends "base.html" %}
{% from "macros.html" import legend, heatmap, row %}
{% set W = "W<sub>" | safe + v.letter + "</sub>" | safe %}
{% block body %}
{% if index_href %}<p class="crumbs"><a href="{{ index_href }}">← all explained questions</a></p>{% endif %}
<header>
<h1>{{ heading }}</h1>
<dl class="facts">
<dt>Record</dt><dd>{{ v.record_id }}</dd>
<dt>Explained answer</dt><dd><b>{{ v.letter }}</b> · {{ v.options[v.explained] }}
 <span class="muted">(chosen by {{ v.explained_rule }})</span></dd>
<dt>Its width (Eq. 2)</dt><dd>{{ W }} = Pl − Bel = {{ f4(v.pl[v.explained]) }} − {{ f4(v.bel[v.explained]) }}
 = <b>{{ f4(v.width) }}</b></dd>
{% if v.gold is not none %}
<dt>Correct answer</dt><dd>{{ letters[v.gold] }} · {{ v.options[v.gold] }}</dd>
{% endif %}
{% if v.reference_width is not none %}
<dt>Difference explained</dt><dd>{{ W }}(input) − mean {{ W }}(references)
 = {{ f4(v.width) }} − {{ f4(v.reference_width) }} = <b>{{ s4(v.width - v.reference_width) }}</b>;
 token scores add to {{ s4(signed_sum) }} (Eq. 9)</dd>
{% endif %}
</dl>
</header>

<section id="intervals">
<h2>Answer intervals [Bel, Pl] (Eq. 1), as in Fig. 1</h2>
<table>
<thead><tr><th></th><th>Option</th><th class="interval-cell">{{ axis }}</th>
<th class="num">Bel</th><th class="num">Pl</th><th class="num">Width</th><th class="num">BetP</th>
</tr></thead>
<tbody>
{% for o in option_rows %}
<tr class="{{ 'explained' if o.explained else '' }}" data-option="{{ o.letter }}">
<td class="letter">{{ o.letter }}</td>
<td>{{ o.text }}
{%- if o.explained %}<span class="badge">explained</span>{% endif %}
{%- if o.gold %}<span class="badge gold">correct</span>{% endif %}</td>
<td class="interval-cell">{{ o.svg }}</td>
<td class="num">{{ f4(o.bel) }}</td><td class="num">{{ f4(o.pl) }}</td>
<td class="num">{{ f4(o.pl - o.bel) }}</td><td class="num">{{ f4(o.betp) }}</td>
</tr>
{% endfor %}
</tbody>
</table>
<div class="key">
<span><span class="swatch" style="background: {{ explained_fill }}"></span> explained answer's interval</span>
<span><span class="swatch" style="background: {{ other_fill }}"></span> other answers</span>
<span><span class="tick"></span> BetP (the answer with the largest is the prediction)</span>
<span>bar length = width: mass on sets holding the option and others</span></div>
</section>

<section id="signed-view">
<h2>Prompt shaded by signed attribution of {{ W }}</h2>
{{ legend(signed_scale.gradient(), s4(-signed_scale.vmax), "white = 0", s4(signed_scale.vmax),
   "red raises the width relative to the references, blue lowers it") }}
{{ heatmap(signed_cells, "signed") }}
{% if v.marks %}<p class="key marks">
{%- for m in v.marks %}<span><span class="mark-swatch mark-{{ loop.index0 % mark_styles }}"></span>
{% set n = m.positions | length %}outlined: {{ m.label }} ({{ n }} token{{ '' if n == 1 else 's' }})</span>
{% endfor %}</p>{% endif %}
<p class="note">Hover a token for its exact values.
Dotted underline: not eligible for zero-masking (Sec. 5.2). Special tokens are outlined and unshaded
{%- if n_hidden %}; {{ n_hidden }} padding positions are hidden{% endif %}.</p>
</section>

<section id="magnitude-view">
<h2>Prompt shaded by token magnitude (used for ranking)</h2>
{{ legend(magnitude_scale.gradient(), "0", "white = 0", g(magnitude_scale.vmax),
   "darker = larger contribution, either sign") }}
{{ heatmap(magnitude_cells, "magnitude") }}
</section>

<div class="cards">
<section id="masses">
<h2>Masses of the answer sets</h2>
<table>
<thead>{{ row(["Set", "Mass", ""], [1]) }}</thead>
<tbody>
{% for m in mass_rows %}
<tr data-set="{{ m.label }}" data-mass="{{ m.mass_exact }}">
<td>{{ m.label }}{% if m.in_width %} <span class="muted">→ {{ W }}</span>{% endif %}</td>
<td class="num">{{ f4(m.mass) }}</td>
<td class="bar-cell"><div class="hbar{{ ' width' if m.in_width else '' }}" style="width: {{ pct(m.mass) }}%">
</div></td></tr>
{% endfor %}
</tbody>
</table>
<p class="note">→ {{ W }}: the set holds {{ v.letter }} and another option, so its mass counts toward
the width (Eq. 2).
{% if n_dropped %}{{ n_dropped }} sets below {{ v.mass_threshold }} are not listed
(together {{ g(dropped_total) }}).{% endif %}</p>
</section>

<section id="shares">
<h2>Section shares of total magnitude</h2>
{% if share_rows %}
<table>
<thead>{{ row(["Section", "Share", ""], [1]) }}</thead>
<tbody>
{% for s in share_rows %}
<tr data-section="{{ s.name }}"><td>{{ s.label }}</td><td class="num">{{ pct1(s.share) }}%</td>
<td class="bar-cell"><div class="hbar" style="width: {{ pct(s.share) }}%"></div></td></tr>
{% endfor %}
</tbody>
</table>
<p class="note">Magnitudes summed within each section, divided by the prompt's total (App. B.3).</p>
{% else %}<p class="note">No section shares were given for this question.</p>{% endif %}
</section>
</div>

<section id="top-tokens">
<h2>Highest-ranked tokens</h2>
<table>
<thead>{{ row(["Rank", "Token", "Section", "Eligible", "Signed", "Magnitude"], [0, 4, 5]) }}</thead>
<tbody>
{% for t in top_rows %}
<tr><td class="num">{{ loop.index }}</td><td><code>{{ t.text }}</code></td><td>{{ t.section }}</td>
<td>{{ 'yes' if t.eligible else 'no' }}</td>
<td class="num">{{ sig(t.signed) }}</td><td class="num">{{ mag(t.magnitude) }}</td></tr>
{% endfor %}
</tbody>
</table>
</section>

{% if comparison %}
{% macro toks(ts) -%}
{% for t in ts %}<code>{{ t.text }}</code>@{{ t.position }}{{ ", " if not loop.last }}
{%- else %}none{% endfor %}
{%- endmacro %}
<section id="methods">
<h2>Two methods on this question</h2>
<p>{% for name in comparison.names %}<strong>{{ name }}</strong>: {{ comparison.findings[loop.index0] }}.
{% if not loop.last %}<br>{% endif %}{% endfor %}</p>
<table>
<thead>{{ row(["Rank", comparison.names[0], comparison.names[1]], [0]) }}</thead>
<tbody>
{% for rank, a, b in comparison.rows %}
<tr><td class="num">{{ rank }}</td><td>{{ toks([a]) }}</td><td>{{ toks([b]) }}</td></tr>
{% endfor %}
</tbody>
</table>
<p data-agree="{{ comparison.agree | length }}">Both rank in their top {{ comparison.rows | length }}:
{{ toks(comparison.agree) }}. Only {{ comparison.names[0] }}: {{ toks(comparison.only[0]) }}.
Only {{ comparison.names[1] }}: {{ toks(comparison.only[1]) }}.</p>
</section>
{% endif %}

<section id="checks">
<h2>Checks on this question</h2>
{% if check_rows %}
<table>
<thead>{{ row(["Check", "Value", "Threshold", "Verdict", "Note"], [1, 2]) }}</thead>
<tbody>
{% for c in check_rows %}
<tr data-check="{{ c.key }}"><td>{{ c.label }}</td><td class="num">{{ g(c.value) }}</td>
<td class="num">
{%- if c.threshold is not none %}{{ c.direction_symbol }} {{ g(c.threshold) }}{% else %}—{% endif -%}
</td>
<td class="{{ c.verdict_class }}">{{ c.verdict }}</td><td class="muted">{{ c.note }}</td></tr>
{% endfor %}
</tbody>
</table>
{% else %}<p class="note">No checks apply to this question.</p>{% endif %}
</section>

<section id="provenance" class="prov">
<h2>Provenance</h2>
<dl class="facts">
<dt>Experiment</dt><dd>{{ v.provenance.experiment }}</dd>
<dt>Config hash</dt><dd><code>{{ v.provenance.config_hash }}</code></dd>
<dt>Method</dt><dd>{{ v.provenance.method }}</dd>
<dt>References</dt><dd>{{ v.provenance.references }}</dd>
<dt>Samples</dt><dd>{{ v.provenance.samples }}</dd>
{% for name, value in v.provenance.extra %}<dt>{{ name }}</dt><dd>{{ value }}</dd>
{% endfor %}
</dl>
</section>
{% endblock %}
"""

INDEX = """{% extends "base.html" %}
{% block body %}
<header>
<h1>{{ heading }}</h1>
<p class="muted">{{ entries | length }} explained questions{% if subtitle %} · {{ subtitle }}{% endif %}.
Sorted by width, widest first{% if scripted %}; click a column heading to sort by it{% endif %}.</p>
</header>
{% if front %}{{ front }}{% endif %}
<section>
<table id="index-table">
<thead><tr>
<th class="sortable" data-kind="text">Record</th><th class="sortable" data-kind="text">Explained</th>
<th class="num sortable sorted-desc" data-kind="num">Width</th>
<th class="num sortable" data-kind="num">Residual</th>
<th class="num sortable" data-kind="num">Advantage</th>
<th class="sortable" data-kind="text">Checks on the question</th>
</tr></thead>
<tbody>
{% for e in entries %}
<tr>
<td data-sort="{{ e.record_id }}"><a href="{{ e.href }}">{{ e.record_id }}</a></td>
<td data-sort="{{ e.letter }}">{{ e.letter }}</td>
<td class="num" data-sort="{{ e.width }}">{{ f4(e.width) }}</td>
<td class="num" data-sort="{{ num(e.residual) }}">{{ g3(e.residual) }}</td>
<td class="num" data-sort="{{ num(e.advantage) }}">{{ sf4(e.advantage) }}</td>
<td data-sort="{{ e.verdict }}" class="{{ verdict_class(e.verdict) }}">{{ e.verdict }}
{%- if e.checks %}: {{ e.checks }}{% endif %}</td>
</tr>
{% endfor %}
</tbody>
</table>
</section>
{% if scripted %}<script>{{ sort_script }}</script>{% endif %}
{% endblock %}
"""


def _missing(fmt: str) -> Callable[[float | None], str]:
    return lambda x: "—" if x is None or not math.isfinite(x) else format(x, fmt)


FORMATTERS: dict[str, Callable[..., str]] = {
    "f4": _missing(".4f"),  # probabilities and widths
    "s4": _missing("+.4g"),  # signed differences and attributions
    "g": _missing(".4g"),  # other values
    "sig": _missing("+#.4g"),  # attribution values in columns (trailing zeros kept)
    "mag": _missing("#.4g"),
    "sf4": _missing("+.4f"),  # signed widths and width changes (zero-masking advantage)
    "g3": _missing("#.3g"),  # residuals, which range over orders of magnitude
    "pct1": lambda x: format(100.0 * x, ".1f"),  # share as a percentage
    "pct": lambda x: format(100.0 * min(1.0, max(0.0, x)), ".2f"),  # CSS bar width in %
    "num": lambda x: "" if x is None else repr(float(x)),  # machine-readable sort key
}


@lru_cache(maxsize=1)
def environment() -> Environment:
    """Autoescaping environment; an undefined name in a template raises instead of rendering empty."""
    loader = DictLoader(
        {"base.html": BASE, "macros.html": LEGEND, "explanation.html": EXPLANATION, "index.html": INDEX}
    )
    env = Environment(loader=loader, autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)
    env.globals.update(FORMATTERS)
    return env
