"""The report's pictures, drawn with matplotlib (Agg) from arrays taken out of artifacts.

Each function writes one PNG atomically and returns its path; ``dvc plots`` shows them as images. Every
plot has a title and axis labels; axes that count things (questions, tokens) have integer ticks; bins and
markers adapt to the number of questions, so a plot reads the same at 32 and at 1,273 questions. A plot
with nothing to show is not drawn: its function returns None and :data:`NOT_DRAWN` says why (the front
page lists it), rather than an empty or one-point picture. :data:`FIGURES` says in one line what each
picture shows (the report's front page prints it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from xurs_pipeline.io import atomic_path

FIGURES: dict[str, str] = {
    "width_by_correctness": "How wide the predicted answer's credal interval is when the model is right "
    "vs wrong; wrong answers further right means width flags errors (AUROC in the accuracy table).",
    "surviving_total": "The surviving total s of the belief correction (Eq. 5); questions right of s = 1 "
    "were rescaled (Table 8).",
    "advantage_per_question": "Zero-masking advantage A(x) per question (Eq. 8): above zero, masking the top "
    "token changed the width more than masking random tokens; the band is Table 1's 95% interval.",
    "topk_curve": "Mean advantage when masking the k highest-ranked tokens instead of k random eligible "
    "tokens; a curve above zero means the ranking finds tokens that matter.",
    "residual_vs_evaluations": "Completeness residual R (Eq. 9) of each explanation against its gradient "
    "evaluations; points under the dashed lines pass the median and maximum tolerances.",
}


NOT_DRAWN: dict[str, str] = {
    "surviving_total": "this head predicts the 15 masses directly (mass15): the App. A conversion and the "
    "Eq. 5 correction, and so the surviving total s, apply to belief heads only",
    "topk_curve": "zero-masking measured only k = 1 (evaluation.top_k_max = 1): the single value is Table 1",
    "residual_vs_evaluations": "no explanation has a finite residual",
}


def _plain_log_ticks(axis: plt.Axes, low: float, high: float) -> None:
    """A log axis spanning [low, high] labelled in plain numbers (0.001, 0.01, 0.05) at 1, 2 and 5 times a
    power of ten where it spans under two decades, else at powers of ten only; minor ticks unlabelled, so
    labels such as 3x10^-2 and 4x10^-2 never crowd each other."""
    subs = (1.0, 2.0, 5.0) if high < 100 * low else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _counts(axis: plt.Axes) -> None:
    """Integer ticks on an axis that counts (no 0.5 questions)."""
    axis.set_major_locator(MaxNLocator(integer=True))


def save_figure(fig: plt.Figure, path: str | Path) -> Path:
    """``fig`` as a PNG at ``path``, written atomically; the figure is closed."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return Path(path)


def width_by_correctness(width: np.ndarray, correct: np.ndarray, path: str | Path) -> Path:
    """Histogram (counts) of the predicted answer's width (Eq. 2) for correct vs wrong predictions; bins
    span the widths present (``numpy``'s automatic rule, at least 5), not a fixed [0, 1] grid."""
    width, correct = np.asarray(width, float), np.asarray(correct, bool)
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    edges = np.histogram_bin_edges(width, bins="auto") if width.size else np.linspace(0.0, 1.0, 6)
    if edges.size < 6:
        edges = np.linspace(edges[0], edges[-1] if edges[-1] > edges[0] else edges[0] + 1e-3, 6)
    for rows, label in ((correct, "correct"), (~correct, "wrong")):
        ax.hist(width[rows], bins=edges, alpha=0.6, label=f"{label} (n={rows.sum()})")
    ax.set_title("Width of the predicted answer, right vs wrong")
    ax.set_xlabel("credal width W of the predicted answer (Eq. 2)")
    ax.set_ylabel("questions")
    _counts(ax.yaxis)
    ax.legend()
    return save_figure(fig, path)


def surviving_total(s: np.ndarray, path: str | Path) -> Path | None:
    """Histogram of the surviving total s (Eq. 5) with the s = 1 line where rescaling starts. A head that
    predicts the 15 masses directly (mass15) has no correction, hence no s (NaN): nothing is drawn (None;
    ``NOT_DRAWN`` says why)."""
    s = np.asarray(s, float)
    s = s[np.isfinite(s)]
    if not s.size:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.hist(s, bins=np.histogram_bin_edges(s, bins="auto"), color="#4c72b0")
    ax.axvline(1.0, color="crimson", linestyle="--", label="s = 1")
    ax.set_xlabel("surviving total s (Eq. 5)")
    ax.set_ylabel("questions")
    _counts(ax.yaxis)
    rescaled = f"{np.mean(s > 1 + 1e-6):.1%}"
    ax.set_title(f"Surviving total of the correction; rescaled (s > 1): {rescaled}")
    ax.legend()
    return save_figure(fig, path)


def advantage_per_question(advantage: np.ndarray, ci: Sequence[float], path: str | Path) -> Path:
    """Zero-masking advantage A(x) per question (Eq. 8), sorted, with the mean and its bootstrap CI."""
    a = np.sort(np.asarray(advantage, float))
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    rank = np.arange(1, a.size + 1)
    if a.size <= 60:  # one bar per question
        ax.bar(rank, a, color=np.where(a > 0, "#55a868", "#c44e52"))
    else:  # many questions: the sorted values as a filled curve
        ax.fill_between(rank, a, where=a > 0, color="#55a868", step="mid")
        ax.fill_between(rank, a, where=a <= 0, color="#c44e52", step="mid")
    ax.axhline(a.mean() if a.size else 0.0, color="black", label="mean")
    ax.axhspan(ci[0], ci[1], color="grey", alpha=0.3, label="95% CI")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_title("Zero-masking advantage per question (Eq. 8)")
    ax.set_xlabel("question (sorted by advantage)")
    ax.set_ylabel("advantage A(x)")
    _counts(ax.xaxis)
    ax.legend()
    return save_figure(fig, path)


def topk_curve(
    k: np.ndarray, mean: np.ndarray, low: np.ndarray, high: np.ndarray, path: str | Path
) -> Path | None:
    """Mean masking advantage of the top-k tokens against k random eligible tokens, with CIs; None (not
    drawn) with fewer than two values of k: one point is not a curve, and Table 1 already holds it."""
    if np.asarray(k).size < 2:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.plot(k, mean, marker="o")
    ax.fill_between(k, low, high, alpha=0.3)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_title("Masking the top k tokens vs k random tokens")
    ax.set_xlabel("k (tokens masked)")
    ax.set_ylabel("mean advantage")
    _counts(ax.xaxis)
    return save_figure(fig, path)


def residual_vs_evaluations(evaluations: np.ndarray, residual: np.ndarray, path: str | Path) -> Path | None:
    """Completeness residual R (Eq. 9, log axis) against gradient evaluations, with the 0.01/0.05 lines.
    When every explanation used the same number of evaluations (a fixed quadrature), the x axis would hold
    one value: the residuals are drawn per explanation instead (sorted), the evaluations named in the
    title. None (not drawn) when no residual is finite."""
    evaluations, residual = np.asarray(evaluations, float), np.asarray(residual, float)
    keep = np.isfinite(residual) & np.isfinite(evaluations)
    evaluations, residual = evaluations[keep], np.maximum(residual[keep], 1e-12)
    if not residual.size:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    if np.unique(evaluations).size > 1:
        ax.plot(evaluations, residual, "o", alpha=0.7)
        ax.set_xlabel("gradient evaluations per explanation")
        ax.set_title("Completeness residual vs gradient evaluations")
        if evaluations.max() >= 10 * evaluations.min():
            ax.set_xscale("log")
            _plain_log_ticks(ax.xaxis, evaluations.min(), evaluations.max())
        else:  # under a decade: a linear axis reads better than log ticks without labels
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    else:
        ax.plot(np.arange(1, residual.size + 1), np.sort(residual), "o", alpha=0.7)
        ax.set_xlabel("explanation (sorted by residual)")
        ax.set_title(f"Completeness residual, {evaluations[0]:g} gradient evaluations each")
        _counts(ax.xaxis)
    ax.axhline(0.01, color="orange", linestyle="--", label="median tolerance 0.01")
    ax.axhline(0.05, color="crimson", linestyle="--", label="max tolerance 0.05")
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis, min(residual.min(), 0.01), max(residual.max(), 0.05))
    ax.set_ylabel("residual R (Eq. 9)")
    ax.legend(fontsize=8)
    return save_figure(fig, path)
