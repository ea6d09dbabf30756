"""The swap control's pooled result as a picture: per method, how often the cue it ranks first is the cue the
model depends on, on the judge's clear probes (``plan.JUDGE``'s pooled cell ``all``), with its interval
clustered by seed, beside the analysis plan's marks (docs/swap-plan.md), which the verdict asks of every
(model, cue order) cell, not of this pooled figure. The label rankers and the nulls are
drawn hollow and grey: baselines, never judged. ``xurs swap-sweep`` writes it beside its table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.reporting.plots import plt, save_figure


class AgreementRow(NamedTuple):
    """One method's pooled clear agreement on the judge: share, interval, k of n, and whether a baseline."""

    method: str
    share: float
    low: float
    high: float
    k: int
    n: int
    baseline: bool


def agreement_rows(faithful: dict[str, Any]) -> list[AgreementRow]:
    """One row per method with clear probes on the judge, lowest agreement first (the best method on top of
    the picture)."""
    rows = []
    for method, by in faithful["methods"].items():
        c = by[plan.JUDGE]["cells"]["all"]
        if c["clear_n"]:
            shares = (c["clear"], c["clear_low"], c["clear_high"], c["clear_k"], c["clear_n"])
            rows.append(AgreementRow(method, *shares, baseline=method in plan.BASELINES))
    return sorted(rows, key=lambda row: (row.share, row.method))


def agreement_plot(faithful: dict[str, Any] | None, studies: int, path: str | Path) -> Path | None:
    """The picture (module docstring) at ``path``; None, and nothing written, where no method has a clear
    probe (or the studies carry no faithfulness section)."""
    rows = agreement_rows(faithful) if faithful else []
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 0.38 * len(rows) + 1.6))
    for y, row in enumerate(rows):
        colour = "#8c8c8c" if row.baseline else "#1f4e79"
        face = "white" if row.baseline else colour
        error = [[row.share - row.low], [row.high - row.share]]
        ax.errorbar(row.share, y, xerr=error, fmt="o", color=colour, mfc=face, capsize=3, clip_on=False)
        ax.annotate(
            f"{row.k}/{row.n}", (1.02, y), xycoords=("axes fraction", "data"), va="center", fontsize=8
        )
    for x, style, mark in (
        (plan.AGREEMENT_PASS, "--", "each cell's pass mark"),
        (plan.AGREEMENT_PASS_LOWER, ":", "lower bound's mark"),
    ):
        ax.axvline(x, color="#2d7d46", linestyle=style, label=f"{mark} {x}")
    ax.set_yticks(range(len(rows)), [row.method + (" (baseline)" if row.baseline else "") for row in rows])
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel(f"agreement with behaviour on the clear probes ({plan.JUDGE}), clustered 95% interval")
    pooled = f"{studies} {'study' if studies == 1 else 'studies'} pooled"
    ax.set_title(f"Which method follows the model ({pooled})")
    ax.legend(loc="lower right", fontsize=8)
    return save_figure(fig, path)
