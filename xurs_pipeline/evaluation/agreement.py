"""Numerical agreement between two attribution runs of the same question (Sec. 5.4, App. B.3-B.4).

Token rankings: Spearman correlation of token magnitudes and overlap of the top-k positions. Values:
cosine similarity and relative Euclidean distance of the signed (coordinate-level) vectors (App. B.4).
Completeness: the residual R of Eq. 9.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats


def _flat(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def _same_shape(a: np.ndarray, b: np.ndarray, what: str) -> None:
    if np.shape(a) != np.shape(b):
        raise ValueError(f"{what}: the two runs have shapes {np.shape(a)} and {np.shape(b)}; they must match")


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (scipy, average ranks for ties) of two score vectors (n,).

    NaN when either vector is constant (no ranking to compare); checks count NaN as a failure.
    """
    _same_shape(a, b, "spearman")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(stats.spearmanr(_flat(a, "a"), _flat(b, "b")).statistic)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first; ties go to the lower position. (min(k, n),)"""
    if k < 1:
        raise ValueError(f"top-k needs k >= 1, got {k}")
    return np.argsort(-_flat(scores, "scores"), kind="stable")[:k]


def topk_overlap(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Fraction of the top-k positions of ``a`` that are also top-k in ``b`` (App. B.3); k capped at n."""
    _same_shape(a, b, "top-k overlap")
    k = min(k, np.size(a))
    return len(set(top_k(a, k).tolist()) & set(top_k(b, k).tolist())) / k


def cosine(e: np.ndarray, e_ref: np.ndarray) -> float:
    """``e . e' / (|e| |e'|)`` (App. B.4) of two non-zero vectors, any equal shapes (flattened)."""
    _same_shape(e, e_ref, "cosine")
    x, y = _flat(e, "e"), _flat(e_ref, "e'")
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if nx == 0 or ny == 0:
        raise ValueError("cosine similarity is undefined for an all-zero attribution vector")
    return float(x @ y / (nx * ny))


def relative_distance(e: np.ndarray, e_ref: np.ndarray) -> float:
    """``|e - e'| / |e'|`` (App. B.4), relative to the second (reference-run) vector, non-zero."""
    _same_shape(e, e_ref, "relative distance")
    x, y = _flat(e, "e"), _flat(e_ref, "e'")
    ny = np.linalg.norm(y)
    if ny == 0:
        raise ValueError("relative distance is undefined when the second attribution vector is all zero")
    return float(np.linalg.norm(x - y) / ny)


def completeness_residual(signed_sum: float, f_x: float, f_refs: np.ndarray) -> float:
    """Eq. 9: ``R = | sum_ij e_ij - (F_c(X) - mean_b F_c(B_b)) |``.

    signed_sum: the signed sum of coordinate contributions; f_refs (M,): widths of the prepared references
    under the attribution mask and positions.
    """
    refs = _flat(f_refs, "reference widths")
    if refs.size == 0:
        raise ValueError("completeness residual needs at least one prepared-reference width")
    return float(abs(float(signed_sum) - (float(f_x) - refs.mean())))


def max_abs_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Maximum absolute difference, e.g. of the selected answer's width across runs (Table 6)."""
    _same_shape(a, b, "max difference")
    return float(np.max(np.abs(_flat(a, "a") - _flat(b, "b")))) if np.size(a) else 0.0
