"""What the two-cue swap control found for each attribution method: the label a question page puts beside a
method, scoped to where it was measured.

The figures are docs/swap-control.md's pooled sweep (five held-out data seeds, ``xurs swap-sweep``): how often
the cue a method ranks first is the cue the model depends on, on the clear probes, and whether that meets
the agreement marks (>= 0.9 with a Wilson lower bound >= 0.8, ``evaluation/swap/plan.py``), measured with
cue 1 always first and before the analysis plan: a finding, not the plan's verdict.
tests/reporting/test_reporting_method_findings.py checks them against that page's table.
"""

from __future__ import annotations

from dataclasses import dataclass

SCOPE = "swap control, 5 held-out seeds, tiny synthetic model (docs/swap-control.md); not measured on MedQA"


@dataclass(frozen=True)
class Finding:
    """Agreement with what each model does on the clear probes: ``k`` of ``n``, and whether it meets the
    agreement marks (a finding before the analysis plan, not its verdict)."""

    k: int
    n: int
    meets_marks: bool

    def label(self) -> str:
        marks = "meets the agreement marks" if self.meets_marks else "below the agreement marks"
        return f"follows the model on {self.k} of {self.n} clear probes: {marks} ({SCOPE})"


# ``paper`` in the study is the attribute stages' estimator of the sweep, kronrod
FINDINGS = {
    "occlusion_token": Finding(140, 149, True),
    "layer_ig": Finding(123, 149, False),
    "occlusion_span": Finding(123, 149, False),
    "shapley_span": Finding(115, 149, False),
    "grad_l2": Finding(113, 149, False),
    "kronrod": Finding(112, 149, False),
    "grad_x_input": Finding(97, 149, False),
}


def finding_label(method: str) -> str:
    """The swap control's finding for ``method``, or that it was not compared there."""
    found = FINDINGS.get(method)
    return found.label() if found else f"not compared on the swap control ({SCOPE})"
