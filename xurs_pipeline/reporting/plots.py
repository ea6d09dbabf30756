"""The report's pictures, drawn with matplotlib (Agg) from arrays taken out of artifacts.

Each function writes one PNG atomically and returns its path; ``dvc plots`` shows them as images.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from xurs_pipeline.io import atomic_path


def _save(fig: plt.Figure, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return Path(path)


def width_by_correctness(width: np.ndarray, correct: np.ndarray, path: str | Path) -> Path:
    """Histogram of the predicted answer's width (Eq. 2) for correct vs wrong predictions."""
    width, correct = np.asarray(width, float), np.asarray(correct, bool)
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    bins = np.linspace(0.0, 1.0, 21)
    ax.hist(width[correct], bins=bins, alpha=0.6, label=f"correct (n={correct.sum()})", density=True)
    ax.hist(width[~correct], bins=bins, alpha=0.6, label=f"wrong (n={(~correct).sum()})", density=True)
    ax.set_xlabel("credal width of the predicted answer")
    ax.set_ylabel("density")
    ax.legend()
    return _save(fig, path)


def surviving_total(s: np.ndarray, path: str | Path) -> Path:
    """Histogram of the surviving total s (Eq. 5) with the s = 1 line where rescaling starts."""
    s = np.asarray(s, float)
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.hist(s, bins=30, color="#4c72b0")
    ax.axvline(1.0, color="crimson", linestyle="--", label="s = 1")
    ax.set_xlabel("surviving total s")
    ax.set_ylabel("questions")
    ax.set_title(f"rescaled (s > 1): {np.mean(s > 1 + 1e-6):.1%}")
    ax.legend()
    return _save(fig, path)


def advantage_per_question(advantage: np.ndarray, ci: Sequence[float], path: str | Path) -> Path:
    """Zero-masking advantage A(x) per question (Eq. 8), sorted, with the mean and its bootstrap CI."""
    a = np.sort(np.asarray(advantage, float))
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.bar(np.arange(a.size), a, color=np.where(a > 0, "#55a868", "#c44e52"))
    ax.axhline(a.mean() if a.size else 0.0, color="black", label="mean")
    ax.axhspan(ci[0], ci[1], color="grey", alpha=0.3, label="95% CI")
    ax.set_xlabel("question (sorted)")
    ax.set_ylabel("A(x)")
    ax.legend()
    return _save(fig, path)


def topk_curve(k: np.ndarray, mean: np.ndarray, low: np.ndarray, high: np.ndarray, path: str | Path) -> Path:
    """Mean masking advantage of the top-k tokens against k random eligible tokens, with CIs."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.plot(k, mean, marker="o")
    ax.fill_between(k, low, high, alpha=0.3)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("k (tokens masked)")
    ax.set_ylabel("mean advantage")
    return _save(fig, path)


def residual_vs_evaluations(evaluations: np.ndarray, residual: np.ndarray, path: str | Path) -> Path:
    """Completeness residual R (Eq. 9) against gradient evaluations, log-log, with the 0.01/0.05 lines."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.loglog(np.asarray(evaluations, float), np.maximum(np.asarray(residual, float), 1e-12), "o", alpha=0.7)
    ax.axhline(0.01, color="orange", linestyle="--", label="median tolerance 0.01")
    ax.axhline(0.05, color="crimson", linestyle="--", label="max tolerance 0.05")
    ax.set_xlabel("gradient evaluations")
    ax.set_ylabel("residual R")
    ax.legend()
    return _save(fig, path)
