"""The report's swap card: does the attribution follow what each model learned (the two-cue swap control)?

From ``swap/study/summary.json`` (``tasks/swap.py``): per ranking (``trained``, ``randomised``,
``input_only``) the swap accuracy with its Wilson interval, per model, the learned cue's share and the
between-model difference of cue 1's share with its bootstrap interval (``evaluation/swap/measures.py``);
per model, its accuracy where its own cue resolves the question and where only the other does
(``evaluation/swap/inputs.py``). The verdict is the faithfulness study's (``reporting/swap_verdict.py``):
the run's method against what each model does, not the swap accuracy (agreement with the training rule).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from xurs_pipeline.attribution.variants import variant_name
from xurs_pipeline.evaluation.config import SWAP_CHOICES
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.roles import ROLES
from xurs_pipeline.reporting.clue_card import as_number
from xurs_pipeline.reporting.html_templates import environment
from xurs_pipeline.reporting.swap_verdict import faithfulness_verdict

RANKINGS = {
    "trained": "trained models",
    "randomised": "heads re-initialised",
    "input_only": "input only (embedding distance, no model)",
}
RANDOMISED_NAMES = {  # by evaluation.swap_randomise
    "head": "heads re-initialised",
    "tuned": "heads and tuned blocks re-initialised",
}
LEARNED_MIN = plan.MODELS_LEARNED  # a model learned its cue: test accuracy where that cue resolves it


@dataclass(frozen=True)
class SwapStudy:
    """The swap study's summary as the card reads it: ranking -> measures, role -> accuracy by cue."""

    studies: Mapping[str, Mapping[str, Any]]
    accuracy: Mapping[str, Mapping[str, Any]]
    methods: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # swap.agreement.descriptions
    behaves: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # role -> k, n, share
    clear_margin: float = float("nan")  # evaluation.swap_clear_margin of the run
    faithfulness: Mapping[str, Any] = field(default_factory=dict)  # swap.faithfulness.faithfulness's result
    method: str = "the run's method"  # attribution.method: what the run's attributions are

    @classmethod
    def of(cls, summary: Mapping[str, Any], method: str = "the run's method") -> SwapStudy | None:
        """From ``summary.json`` (``method``: the run's ``attribution.method``); None where the swap stages
        were skipped (data without two cues)."""
        if "studies" not in summary:
            return None
        return cls(
            summary["studies"],
            summary.get("accuracy", {}),
            summary.get("methods", {}),
            summary.get("behaves_as_trained", {}),
            _finite(summary.get("clear_margin")),
            summary.get("faithfulness", {}),
            method,
        )

    @property
    def names(self) -> dict[str, str]:
        """Each ranking's label; the randomised one says what was re-initialised."""
        scope = self.studies.get("randomised", {}).get("scope", "head")
        return {**RANKINGS, "randomised": RANDOMISED_NAMES[scope]}


def _finite(x: Any) -> float:
    """``as_number``, with an infinite value also shown as missing."""
    v = as_number(x)
    return v if math.isfinite(v) else float("nan")


def _interval(s: Mapping[str, Any]) -> str:
    return f"{s['swap_accuracy']:.2f} [{s['swap_ci_low']:.2f}, {s['swap_ci_high']:.2f}]"


def swap_verdict(study: SwapStudy) -> tuple[str, str, str]:
    """(answer, css class, evidence) of "Follows what each model learned?": the run's method against what
    each model does (``swap_verdict.faithfulness_verdict``); the training rule's swap accuracy only beside
    it, labelled, since agreeing with the labels' rule is not reading the model."""
    answer, css, evidence = faithfulness_verdict(study.faithfulness, study.method)
    t = study.studies["trained"]
    rule = f"not the answer: agreement with the training rule (swap accuracy) {_interval(t)} over {t['n']}"
    return answer, css, f"{evidence}. {rule}"


CARD = """
<section id="swap">
<h2>Does the attribution follow what each model learned?</h2>
<p>The two-cue swap control: the same questions (both cues unresolved, one shared label) explained against
the same references under model A, which learned cue 1, model B, which learned cue 2, and model C, trained
where both cues name the label, so that which cue it reads is its own choice. An attribution that reads
the model puts A's on cue 1, B's on cue 2 and C's on the cue C reads; one that reads only the input
cannot.</p>
<table>
<thead><tr><th>Model</th><th class="num">Own cue resolves</th><th class="num">n</th>
<th class="num">Only the other cue resolves</th><th class="num">n</th>
<th class="num">Follows the other cue</th></tr></thead>
<tbody>
{% for role, a in accuracy.items() %}
{% set learned = (a.get('accuracy_own_cue') or 0) >= learned_min %}
<tr><td>{{ role }}: {{ cue_of[role] or 'both cues, where they agree' }}</td>
<td class="num {{ ('pass' if learned else 'fail') if cue_of[role] else '' }}">
{{ pct(a.get('accuracy_own_cue')) }}</td><td class="num">{{ a.get('n_own_cue') }}</td>
<td class="num">{{ pct(a.get('accuracy_other_cue_only')) }}</td>
<td class="num">{{ a.get('n_other_cue_only') }}</td>
<td class="num">{{ pct(a.get('follows_other')) }}</td></tr>
{% endfor %}
</tbody>
</table>
<p class="note">Test accuracy on the questions that are not explained: where the model's own cue resolves
the question (chance 25%; a model that learned its cue: &ge; {{ pct(learned_min) }}), where only the other
cue does (50% = it still reads its own cue's pair), and how often it then names the other cue's condition
outside its own pair. Model C is read where the test question's two cues name one label (a model that
reads either cue is right on about 5/6 of them); it has no cue of its own to learn.</p>
<table>
<thead><tr><th>Ranking</th><th class="num">Swap accuracy</th><th class="num">95% CI</th>
<th class="num">A</th><th class="num">B</th><th class="num">Learned cue's share</th>
<th class="num">Cue 1 share, A - B</th><th class="num">95% CI</th></tr></thead>
<tbody>
{% for name, s in studies %}
<tr><td>{{ names[name] or name }}</td><td class="num">{{ f2(s.swap_accuracy) }}</td>
<td class="num">[{{ f2(s.swap_ci_low) }}, {{ f2(s.swap_ci_high) }}]</td>
<td class="num">{{ f2(s.get('swap_accuracy_A')) }}</td><td class="num">{{ f2(s.get('swap_accuracy_B')) }}</td>
<td class="num">{{ pct(s.get('learned_share')) }}</td><td class="num">{{ f2(s.get('share_difference')) }}</td>
<td class="num">[{{ f2(s.get('share_ci_low')) }}, {{ f2(s.get('share_ci_high')) }}]</td></tr>
{% endfor %}
</tbody>
</table>
<p class="{{ css }}">{{ answer }}: {{ detail }}.</p>
{% if methods %}
<h3>Which explanation to trust: each method against what the models do</h3>
<p>What each model depends on is measured on the probe's text: one cue resolved to the label, or turned to
its other condition, and the label's width read again (edits the training data holds). Model A depends on
cue 1 on {{ behaves.A.k }} of {{ behaves.A.n }} probes, model B on cue 2 on {{ behaves.B.k }} of
{{ behaves.B.n }}: where a model did not learn its labels' rule, the attribution should follow the model.
Model C's labels name no cue: on every probe where it depends on one, only the model can say which.</p>
<table>
<thead><tr><th>Method</th><th class="num">Agrees with behaviour (clear probes)</th>
<th class="num">95% CI</th><th class="num">k/n</th><th class="num">All decided probes</th>
<th class="num">Swap accuracy (training rule)</th><th class="num">Rank corr. of cue shares</th>
<th class="num">Model evaluations per probe</th><th>Verdict (analysis plan)</th></tr></thead>
<tbody>
{% for name, m in methods %}
<tr><td>{{ name }}</td><td class="num">{{ f2(m.agreement_clear) }}</td>
<td class="num">[{{ f2(m.agreement_clear_low) }}, {{ f2(m.agreement_clear_high) }}]</td>
<td class="num">{{ m.agreement_clear_k }}/{{ m.agreement_clear_n }}</td>
<td class="num">{{ f2(m.agreement) }}</td>
<td class="num">{{ f2(m.swap) }} [{{ f2(m.swap_low) }}, {{ f2(m.swap_high) }}]</td>
<td class="num">{{ f2(m.spearman) }}</td><td class="num">{{ m.evals_median | round | int }}</td>
<td>{{ verdicts.get(name, '—') }}</td></tr>
{% endfor %}
</tbody>
</table>
<p class="note">A method agrees on a probe when the cue it ranks first is the cue whose edits move the
model's width more; clear probes are those where one cue's effect exceeds the other's by a margin of at least
{{ clear_margin }} of their sum. The verdict is the analysis plan's (docs/swap-plan.md): agreement &ge;
{{ agreement_pass[0] }} with a lower bound &ge; {{ agreement_pass[1] }} (clustered) on the clear probes of
every model and cue order, and above the training-rule and constant rankers by a paired test; the baselines
are never judged. One data seed gives no verdict: pool seeds with <code>xurs swap-sweep</code>
(docs/swap-control.md).</p>
{% endif %}
<p class="note">Swap accuracy: the share of explanations whose learned cue's best token outranks every token
of the other cue (a tie fails), with its Wilson interval, and the between-model difference of cue 1's share
of the two cues' magnitude (question-level bootstrap): how often the ranking follows the training rule, a
description beside the plan's verdict, never a pass mark of its own. The input-only ranking is the same
under both models, so its pooled swap accuracy is 1/2 by construction, less where the cues tie (a tie fails
both). Question pages outline both cues.</p>
</section>
"""


def _pct(x: Any) -> str:
    v = _finite(x)
    return "—" if math.isnan(v) else f"{100 * v:.0f}%"


def _f2(x: Any) -> str:
    v = _finite(x)
    return "—" if math.isnan(v) else f"{v:.2f}"


def _in_order(methods: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The methods in ``evaluation.swap_methods``' canonical order (the paper's estimator first)."""
    rank = {m: i for i, m in enumerate(SWAP_CHOICES)}
    return sorted(methods.items(), key=lambda item: rank.get(variant_name(item[0]), len(rank)))


def render_swap_card(study: SwapStudy | None) -> Markup:
    """The card; empty markup where the swap stages were skipped."""
    if study is None:
        return Markup("")
    answer, css, detail = swap_verdict(study)
    return Markup(
        environment()
        .from_string(CARD)
        .render(
            studies=[(k, study.studies[k]) for k in RANKINGS if k in study.studies],
            accuracy=study.accuracy,
            names=study.names,
            answer=answer,
            css=css,
            detail=detail,
            cue_of={name: f"cue {role.cue}" if role.cue else "" for name, role in ROLES.items()},
            pct=_pct,
            f2=_f2,
            learned_min=LEARNED_MIN,
            methods=_in_order(study.methods),
            behaves=study.behaves,
            clear_margin=_f2(study.clear_margin),
            agreement_pass=(plan.AGREEMENT_PASS, plan.AGREEMENT_PASS_LOWER),
            verdicts={m: by["verdict"] for m, by in study.faithfulness.get("methods", {}).items()},
        )
    )
