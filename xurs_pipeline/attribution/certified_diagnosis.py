"""Where the ``certified`` rule's error sits: per reference and per path segment (``certified.py``).

``Recorder.wrap(evaluate)`` wraps the rule's ``evaluate`` callback and keeps every node it asks for with its
slopes (dF_t/dα, (n, T)); ``per_reference`` and ``per_segment`` read them back after
:func:`certified.certify`, the first with the exact gaps F(X) - F(B_r):

- per reference r: its points n_r, gap, signed error rho_r = Q_r - gap_r (exact), and its share of
  Σ_r rho_r^2, the sum the spread criterion (2) bounds;
- per segment [a, b) of α: the share of the evaluations placed there, the share of the path's variation
  Σ_r ∫_a^b |g_r| (what the swing of F along the path puts there) and the share of the nested error
  indicator Σ_r |Q_r,[a,b)(n_r) - Q_r,[a,b)(n_r / 2)|, each reference's last doubling restricted to the
  segment (the rule's own error estimate, located).

A segment whose error share is far above its evaluation share is where more points (or points placed
there) pay; a reference whose share of Σ rho^2 is far above 1/M is where the references' errors do not
average out. Scalars are summed over the explained targets (|.| first).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xurs_pipeline.attribution.certified import Evaluate


class Recorder:
    """Every node the rule evaluated: per call, per reference, (alphas (n,), slopes (n, T))."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[int, np.ndarray, np.ndarray]]] = []

    def wrap(self, evaluate: Evaluate) -> Evaluate:
        """``evaluate`` itself, recording what it was asked and what its slopes were."""

        def recording(nodes: list[tuple[int, np.ndarray]]) -> list:
            results = evaluate(nodes)
            call = [(r, np.asarray(a), np.asarray(s)) for (r, a), (s, _) in zip(nodes, results, strict=True)]
            self.calls.append(call)
            return results

        return recording

    def nodes(self, ref: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Reference ``ref``'s batches in the order evaluated: level n/2's nodes, then each doubling's."""
        return [(a, s) for call in self.calls for r, a, s in call if r == ref]


def per_reference(recorder: Recorder, gap: np.ndarray) -> pd.DataFrame:
    """One row per reference: points, gap, rho (signed exact error, summed over targets), rho2_share."""
    gap = np.asarray(gap, dtype=np.float64).reshape(len(gap), -1)
    rows = []
    for r in range(len(gap)):
        batches = recorder.nodes(r)
        n = sum(len(a) for a, _ in batches)
        integral = sum(s.sum(0) for _, s in batches) / n
        rows.append({"reference": r, "points": n, "gap": float(gap[r].sum()),
                     "rho": float((integral - gap[r]).sum())})  # fmt: skip
    frame = pd.DataFrame(rows)
    total = float((frame["rho"] ** 2).sum())
    frame["rho2_share"] = frame["rho"] ** 2 / total if total > 0 else 0.0
    return frame


def per_segment(recorder: Recorder, n_refs: int, segments: int = 8) -> pd.DataFrame:
    """One row per α segment [a, b) of ``segments`` equal ones: evaluations, evals_share, variation_share
    (Σ_r ∫|g_r| there at each reference's final level), error_share (Σ_r |its last doubling's change of
    Q_r restricted there|)."""
    edges = np.linspace(0.0, 1.0, segments + 1)
    evals, variation, error = np.zeros(segments), np.zeros(segments), np.zeros(segments)
    for r in range(n_refs):
        batches = recorder.nodes(r)
        alphas = np.concatenate([a for a, _ in batches])
        slopes = np.concatenate([np.abs(s).sum(1) if s.ndim > 1 else np.abs(s) for _, s in batches])
        signed = np.concatenate([s.sum(1) if s.ndim > 1 else s for _, s in batches])
        where = np.clip(np.searchsorted(edges, alphas, side="right") - 1, 0, segments - 1)
        n, last = len(alphas), len(batches[-1][0])
        evals += np.bincount(where, minlength=segments)
        variation += np.bincount(where, weights=slopes, minlength=segments) / n
        coarse = np.bincount(where[: n - last], weights=signed[: n - last], minlength=segments) / (n - last)
        error += np.abs(np.bincount(where, weights=signed, minlength=segments) / n - coarse)
    return pd.DataFrame({
        "start": edges[:-1], "end": edges[1:], "evaluations": evals.astype(np.int64),
        "evals_share": evals / max(evals.sum(), 1),
        "variation_share": variation / max(variation.sum(), 1e-300),
        "error_share": error / max(error.sum(), 1e-300),
    })  # fmt: skip
