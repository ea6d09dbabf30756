"""The report's clue card: does the attribution find the clue, and does that depend on the model?

From ``checks/checks.json``: ``localisation`` (App. C over every explained question, the trained model)
and ``localisation_nulls`` (``evaluation.clue_nulls``: the trained model, the head re-initialised and
the input-only ranking on the same questions and references, live positions only, with the base rate).
The card says plainly when the trained model's localisation does not beat its nulls: then it holds by
construction of the references or does not depend on the model. Beating them is necessary, not
sufficient (a test that can fail is the two-cue swap control).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from xurs_pipeline.reporting.html_templates import environment

NULLS = {
    "trained": "trained model",
    "randomised_head": "head re-initialised",
    "input_only": "input only (embedding distance, no model)",
}


def as_number(x: Any) -> float:
    """A summary figure as a float; None (a figure the summary leaves out) becomes NaN."""
    return float("nan") if x is None else float(x)


@dataclass(frozen=True)
class NullRow:
    """One ranking's localisation in one region over the questions every ranking explains."""

    ranking: str
    region: str
    questions: int
    rank_1_share: float
    clue_share_pct: float
    base_rate: float
    live_positions: float
    live_clue_positions: float

    @classmethod
    def of(cls, nulls: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> tuple[NullRow, ...]:
        """From ``checks.json``'s ``localisation_nulls`` (ranking -> region -> summary)."""
        nan = float("nan")
        return tuple(
            cls(
                ranking,
                region,
                int(m["questions"]),
                float(m["best_rank_1_share"]),
                float(m["mean_clue_share_pct"]),
                float(m.get("base_rate_rank_1", nan)),
                float(m.get("median_live_positions", nan)),
                float(m.get("median_live_clue_positions", nan)),
            )
            for ranking, regions in nulls.items()
            for region, m in regions.items()
        )


@dataclass(frozen=True)
class ClueVerdict:
    """Whether the trained model's localisation in ``region`` beats every null; ``reasons`` when not."""

    region: str
    beats_nulls: bool
    reasons: tuple[str, ...]


def clue_verdict(rows: tuple[NullRow, ...], region: str) -> ClueVerdict:
    """The trained model beats its nulls in ``region`` when its rank-1 share is above the base rate and
    above the randomised head's and the input-only ranking's, and its clue share above theirs (a tie
    does not beat). Without a randomised-head run the model-dependence is untested: not beaten."""
    by = {r.ranking: r for r in rows if r.region == region}
    if "trained" not in by:
        return ClueVerdict(region, False, ("no localisation of the trained model",))
    t = by["trained"]
    reasons = []
    if not t.base_rate < t.rank_1_share:
        reasons.append(
            f"random scores over the {t.live_positions:g} positions that can take attribution put the clue "
            f"first on {100 * t.base_rate:.0f}% of questions, the trained model on "
            f"{100 * t.rank_1_share:.0f}%"
        )
    if "randomised_head" not in by:
        reasons.append(
            "no run with the head re-initialised (evaluation.randomisation_questions=0): "
            "whether the localisation depends on the model is untested"
        )
    for name, meaning in (
        ("randomised_head", "does not depend on the model"),
        ("input_only", "holds by construction of the references"),
    ):
        n = by.get(name)
        if n is None:
            continue
        if n.rank_1_share >= t.rank_1_share or n.clue_share_pct >= t.clue_share_pct:
            reasons.append(
                f"the {NULLS[name]} puts the clue first on {100 * n.rank_1_share:.0f}% (clue share "
                f"{n.clue_share_pct:.1f}%) against the trained model's {100 * t.rank_1_share:.0f}% "
                f"({t.clue_share_pct:.1f}%): the localisation {meaning}"
            )
    return ClueVerdict(region, not reasons, tuple(reasons))


CARD = """
<section id="clue">
<h2>Does the attribution find the clue?</h2>
{% if rows %}
<table>
<thead><tr><th>Region</th><th class="num">Questions</th><th class="num">Clue ranks first</th>
<th class="num">Median best rank</th><th class="num">Clue share</th>
<th class="num">Above control windows (pp)</th><th class="num">95% CI</th></tr></thead>
<tbody>
{% for c in rows %}
<tr><td>{{ c.region | replace("_", " ") }}</td><td class="num">{{ c.questions }}</td>
<td class="num">{{ pct(c.rank_1_share) }}</td><td class="num">{{ c.median_best_rank | round(1) }}</td>
<td class="num">{{ c.clue_share_pct | round(1) }}%</td><td class="num">{{ num(c.difference_pp) }}</td>
<td class="num {{ verdict_class(c.ci_low) }}">
[{{ num(c.ci_low) }}, {{ num(c.ci_high) }}]</td></tr>
{% endfor %}
</tbody>
</table>
<p class="note">App. C over the positions that can take attribution (where the input differs from at least
one reference): "clue ranks first" is the share of questions whose best clue token has the largest
attribution magnitude in the region; the clue share is its part of the region's magnitude, compared with
equal-length clue-free windows of live positions ("—" when the clue leaves no such window). With an
aligned paired reference only the positions that differ from it (the clue) can receive attribution, so
these numbers hold by construction (table table9_localisation).</p>
{% endif %}
{% if nulls %}
<h3>Against its nulls</h3>
<table>
<thead><tr><th>Region</th><th>Ranking</th><th class="num">Questions</th><th class="num">Clue ranks first</th>
<th class="num">Clue share</th><th class="num">Random scores: clue first</th>
<th class="num">Live positions (clue)</th></tr></thead>
<tbody>
{% for n in nulls %}
<tr><td>{{ n.region | replace("_", " ") }}</td><td>{{ names[n.ranking] or n.ranking }}</td>
<td class="num">{{ n.questions }}</td><td class="num">{{ pct(n.rank_1_share) }}</td>
<td class="num">{{ n.clue_share_pct | round(1) }}%</td><td class="num">{{ pct(n.base_rate) }}</td>
<td class="num">{{ num(n.live_positions) }} ({{ num(n.live_clue_positions) }})</td></tr>
{% endfor %}
</tbody>
</table>
{% for v in verdicts %}
{% if v.beats_nulls %}<p class="pass">{{ v.region | replace("_", " ") }}: the trained model's localisation
beats the randomised head, the input-only ranking and random scores (necessary, not sufficient: the
two-cue swap control is the test that can fail).</p>
{% else %}<p class="fail">{{ v.region | replace("_", " ") }}: the trained model's localisation does not beat
its nulls, so it does not show what the model learned: {{ v.reasons | join("; ") }}.</p>{% endif %}
{% endfor %}
<p class="note">The same questions and references three ways: the trained model's attribution, the same
estimator with the classifier's head re-initialised, and a ranking without a model (per position, the
summed embedding distance between the input token and the references' tokens as prepared for
attribution). "Random scores" is the expected share of questions whose clue ranks first when every live
position is equally likely to rank first (clue live positions / live positions, averaged).</p>
{% elif rows %}
<p class="fail">No null was computed for this localisation (checks ran before the nulls existed): whether it
depends on the model is untested.</p>
{% endif %}
</section>
"""


def _verdict_class(ci_low: float) -> str:
    """pass / fail for an interval's lower bound, none when there is no interval (NaN)."""
    return "" if math.isnan(ci_low) else ("pass" if ci_low > 0 else "fail")


def _pct(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.1f}".removesuffix(".0")


def render_clue_card(rows: tuple[Any, ...], nulls: Mapping[str, Any]) -> Markup:
    """The card: ``rows`` (front_page.ClueRow, the trained model over every explained question) and the
    ``localisation_nulls`` summary; empty markup on data without a clue."""
    if not rows and not nulls:
        return Markup("")
    null_rows = NullRow.of(nulls)
    regions = list(dict.fromkeys(r.region for r in null_rows))
    return Markup(
        environment()
        .from_string(CARD)
        .render(
            rows=rows,
            nulls=null_rows,
            names=NULLS,
            verdicts=[clue_verdict(null_rows, r) for r in regions],
            pct=_pct,
            num=_num,
            verdict_class=_verdict_class,
        )
    )
