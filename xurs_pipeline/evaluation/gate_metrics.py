"""Per-prediction quantities of the controlled-model gates (App. D.3), over numpy arrays.

masses are (n, 15) in ``FOCAL_SETS`` order; widths and BetP come from ``xurs_pipeline.credal`` (computed
without the validity scan, so invalid predictions are measured and reported rather than raised).
"""

from __future__ import annotations

import numpy as np
import torch

from xurs_pipeline import credal


def _as_masses(masses: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(masses, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != credal.N_MASSES:
        raise ValueError(
            f"{name}: expected (n, {credal.N_MASSES}) masses in FOCAL_SETS order, got {arr.shape}"
        )
    return arr


def widths(masses: np.ndarray) -> np.ndarray:
    """W_c for the four options (Eq. 2), (n, 4)."""
    m = torch.from_numpy(_as_masses(masses, "masses"))
    return credal.credal_width(m, validate=False).numpy()


def betp(masses: np.ndarray) -> np.ndarray:
    """BetP(c) for the four options (Eq. 2), (n, 4)."""
    m = torch.from_numpy(_as_masses(masses, "masses"))
    return credal.pignistic(m, validate=False).numpy()


def mass_error(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Total absolute mass error ``E_m = sum_S |m_hat(S) - m(S)|`` (App. D.3), (n,)."""
    p, t = _as_masses(pred, "predicted masses"), _as_masses(target, "target masses")
    if p.shape != t.shape:
        raise ValueError(f"predicted {p.shape} and target {t.shape} masses differ in shape")
    return np.abs(p - t).sum(axis=1)


def width_error(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Mean absolute width difference over the four answers (App. D.3), (n,)."""
    return np.abs(widths(pred) - widths(target)).mean(axis=1)


def selected(masses: np.ndarray) -> np.ndarray:
    """The selected answer argmax_k BetP(k) (Sec. 3.1), (n,) int."""
    return np.argmax(betp(masses), axis=1)


def is_valid(masses: np.ndarray, tol: float) -> np.ndarray:
    """Non-negative, finite, and summing to one within ``tol`` (App. D.3), (n,) bool."""
    m = _as_masses(masses, "masses")
    return np.all(np.isfinite(m), axis=1) & np.all(m >= 0, axis=1) & (np.abs(m.sum(axis=1) - 1) <= tol)


def _set_permutation(perm: tuple[int, ...]) -> np.ndarray:
    """Index map (15,): displayed set k holds the canonical set FOCAL_SETS[out[k]]."""
    return np.array([credal.FOCAL_INDEX[tuple(sorted(perm[p] for p in s))] for s in credal.FOCAL_SETS])


def map_to_canonical(masses: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Re-express masses of rearranged prompts over the canonical answer identities, (n, 15).

    perms (n, 4): perms[r, p] is the canonical answer shown at displayed option p of row r.
    """
    m = _as_masses(masses, "masses")
    perms = np.asarray(perms, dtype=np.int64)
    if perms.shape != (m.shape[0], credal.N_OPTIONS) or not np.all(np.sort(perms, axis=1) == np.arange(4)):
        raise ValueError(f"perms must be (n, 4) permutations of 0..3, got shape {perms.shape}")
    out = np.zeros_like(m)
    for r in range(m.shape[0]):
        out[r, _set_permutation(tuple(int(x) for x in perms[r]))] = m[r]
    return out


def family_mean(values: np.ndarray, families: np.ndarray) -> float:
    """Mean within each condition family first, then across families (App. D.3); NaN if empty."""
    v = np.asarray(values, dtype=np.float64)
    f = np.asarray(families)
    if v.shape != f.shape:
        raise ValueError(f"values {v.shape} and families {f.shape} must align")
    if v.size == 0:
        return float("nan")
    return float(np.mean([v[f == fam].mean() for fam in np.unique(f)]))
