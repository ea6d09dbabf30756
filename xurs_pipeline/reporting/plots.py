"""The report's pictures, drawn with matplotlib (Agg) from arrays taken out of artifacts.

Each function writes one PNG atomically and returns its path; ``dvc plots`` shows them as images. Every
plot has a title and axis labels; axes that count things (questions, tokens) have integer ticks; bins and
markers adapt to the number of questions, so a plot reads the same at 32 and at 1,273 questions.
:data:`FIGURES` says in one line what each picture shows (the report's front page prints it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

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


def _counts(axis: plt.Axes) -> None:
    """Integer ticks on an axis that counts (no 0.5 questions)."""
    axis.set_major_locator(MaxNLocator(integer=True))


def _save(fig: plt.Figure, path: str | Path) -> Path:
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
    return _save(fig, path)


def surviving_total(s: np.ndarray, path: str | Path) -> Path:
    """Histogram of the surviving total s (Eq. 5) with the s = 1 line where rescaling starts. A head that
    predicts the 15 masses directly (mass15) has no correction, hence no s (NaN): the figure says so."""
    s = np.asarray(s, float)
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    if s.size and not np.isfinite(s).any():
        ax.text(0.5, 0.5, "no surviving total: this head predicts the 15 masses directly (mass15);\n"
                "the App. A conversion and the Eq. 5 correction apply to belief heads only",
                ha="center", va="center", transform=ax.transAxes, fontsize=9)  # fmt: skip
        ax.set_axis_off()
        return _save(fig, path)
    ax.hist(s, bins=np.histogram_bin_edges(s, bins="auto") if s.size else 10, color="#4c72b0")
    ax.axvline(1.0, color="crimson", linestyle="--", label="s = 1")
    ax.set_xlabel("surviving total s (Eq. 5)")
    ax.set_ylabel("questions")
    _counts(ax.yaxis)
    rescaled = f"{np.mean(s > 1 + 1e-6):.1%}" if s.size else "—"
    ax.set_title(f"Surviving total of the correction; rescaled (s > 1): {rescaled}")
    ax.legend()
    return _save(fig, path)


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
    return _save(fig, path)


def topk_curve(k: np.ndarray, mean: np.ndarray, low: np.ndarray, high: np.ndarray, path: str | Path) -> Path:
    """Mean masking advantage of the top-k tokens against k random eligible tokens, with CIs."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.plot(k, mean, marker="o")
    ax.fill_between(k, low, high, alpha=0.3)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_title("Masking the top k tokens vs k random tokens")
    ax.set_xlabel("k (tokens masked)")
    ax.set_ylabel("mean advantage")
    _counts(ax.xaxis)
    return _save(fig, path)


def residual_vs_evaluations(evaluations: np.ndarray, residual: np.ndarray, path: str | Path) -> Path:
    """Completeness residual R (Eq. 9) against gradient evaluations, log-log, with the 0.01/0.05 lines."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.loglog(np.asarray(evaluations, float), np.maximum(np.asarray(residual, float), 1e-12), "o", alpha=0.7)
    ax.axhline(0.01, color="orange", linestyle="--", label="median tolerance 0.01")
    ax.axhline(0.05, color="crimson", linestyle="--", label="max tolerance 0.05")
    ax.set_title("Completeness residual vs gradient evaluations")
    ax.set_xlabel("gradient evaluations per explanation")
    ax.set_ylabel("residual R (Eq. 9)")
    ax.legend()
    return _save(fig, path)
