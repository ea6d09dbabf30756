"""Prediction metrics (Sec. 5.1, 6.1) and the correction audit (Sec. 5.3, Table 8).

Error-detection AUROC: the probability that a wrong prediction scores higher than a right one (ties
count one half), i.e. the Mann-Whitney U statistic divided by the number of (wrong, right) pairs. Two
scores are compared: the selected answer's credal width W_c (Eq. 2), and low probability of the
selected answer, 1 - BetP(c).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu

from xurs_pipeline.credal import N_OPTIONS


def auroc(scores: np.ndarray, positive: np.ndarray) -> float | None:
    """P(score of a positive > score of a negative) + 1/2 P(tie); None if either class is empty."""
    scores = np.asarray(scores, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    if scores.shape != positive.shape:
        raise ValueError(f"auroc: scores {scores.shape} and labels {positive.shape} differ in shape")
    pos, neg = scores[positive], scores[~positive]
    if len(pos) == 0 or len(neg) == 0:
        return None
    u = mannwhitneyu(pos, neg, alternative="two-sided", method="asymptotic").statistic
    return float(u / (len(pos) * len(neg)))


def _selected(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = np.stack(frame[column].to_numpy())  # (n, 4)
    return values[np.arange(len(frame)), frame["predicted"].to_numpy()]


def prediction_metrics(frame: pd.DataFrame) -> dict[str, Any]:
    """Accuracy, mean answer NLL and both error-detection AUROCs of a predictions frame."""
    if frame.empty:
        raise ValueError("prediction_metrics: no predictions")
    correct = frame["correct"].to_numpy(dtype=bool)
    betp = np.stack(frame["betp"].to_numpy())
    answer_betp = betp[np.arange(len(frame)), frame["answer_idx"].to_numpy()]
    width_selected = _selected(frame, "width")
    betp_selected = _selected(frame, "betp")
    answers = frame["answer_idx"].to_numpy(dtype=int)
    return {
        "n": len(frame),
        "accuracy": float(correct.mean()),
        "chance": 1.0 / N_OPTIONS,  # a uniform guess among the options
        "majority": float(np.bincount(answers, minlength=N_OPTIONS).max() / len(frame)),  # most common answer
        **with_and_without_result(frame),
        "answer_nll": float(-np.log(np.clip(answer_betp, 1e-12, None)).mean()),
        "mean_width_selected": float(width_selected.mean()),
        "auroc_width": auroc(width_selected, ~correct),
        "auroc_low_probability": auroc(1.0 - betp_selected, ~correct),
    }


def with_result_flags(frame: pd.DataFrame, prompts: pd.DataFrame) -> pd.DataFrame:
    """``frame`` plus the prompts' ``has_result`` per record, where the data has it (controlled data)."""
    flags = prompts.set_index("record_id")["has_result"] if "has_result" in prompts.columns else None
    if flags is None or flags.isna().any():
        return frame
    return frame.assign(has_result=frame["record_id"].map(flags).astype(bool))


def with_and_without_result(frame: pd.DataFrame) -> dict[str, float]:
    """Accuracy on the controlled questions with the result (clue) shown and on those without, where the
    frame has a boolean ``has_result`` column (synthetic data); empty otherwise. Without the result the
    answer is not determined, so accuracy there near chance is expected (App. C, D)."""
    if "has_result" not in frame.columns:
        return {}
    shown = frame["has_result"].to_numpy(dtype=bool)
    correct = frame["correct"].to_numpy(dtype=bool)
    return {
        f"accuracy_{name}": float(correct[rows].mean())
        for name, rows in (("with_result", shown), ("without_result", ~shown))
        if rows.any()
    }


def correction_audit(frame: pd.DataFrame, configuration: str) -> dict[str, Any]:
    """One row of Table 8: rescaling share (s > 1 + 1e-6), mean total adjustment, share of predictions
    with a negative intermediate value. Softmax heads (empty ``beliefs``) have no correction."""
    applies = bool(len(frame)) and len(frame["beliefs"].iloc[0]) > 0
    row: dict[str, Any] = {"configuration": configuration, "n": len(frame), "correction_applies": applies}
    if applies:
        row.update(
            rescaling_pct=float(100.0 * frame["rescaled"].mean()),
            mean_total_adjustment=float(frame["total_adjustment"].mean()),
            negative_share=float((frame["n_negative"] > 0).mean()),
            mean_s=float(frame["s"].mean()),
            mean_r=float(frame["r"].mean()),
        )
    return row
