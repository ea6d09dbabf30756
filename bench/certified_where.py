"""Where `certified`'s evaluations and error go on a trained question: per reference and per segment of α.

    python bench/certified_where.py --experiment local [--questions 1] [--refs 16] [--budget 1024] \
        [--segments 8] [--out results/bench/certified_where.json]

Runs the ``attribute`` stage's own ``attribute_question`` with ``attribution.method=certified`` against the
first ``--refs`` training references, with ``certified_diagnosis.Recorder`` around the estimator's
``evaluate``, and prints per question ``certified_diagnosis.per_reference`` (points, exact signed error,
share of Σ rho^2) and ``per_segment`` (share of the evaluations, of the path's variation and of the last
doubling's change in each α segment), plus each reference's slope profile along α on its nodes (where the
path swings: the stretch of α holding half of ∫|g|). Writes them as JSON to ``--out``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trained import experiment_parser, explained_questions, load

import xurs_pipeline.attribution.estimators as estimators
from xurs_pipeline.attribution.certified import TRACE_COLUMNS
from xurs_pipeline.attribution.certified_diagnosis import Recorder, per_reference, per_segment
from xurs_pipeline.attribution.methods import attribute_question


def swing(recorder: Recorder, ref: int) -> dict[str, float]:
    """Where reference ``ref``'s path changes: the narrowest stretch [a, b] of α holding half of its Σ|g| on
    its nodes, and the largest |g| against the mean |g| (1 on a straight-line width, large on a swing)."""
    alphas = np.concatenate([a for a, _ in recorder.nodes(ref)])
    slopes = np.concatenate([np.abs(s.reshape(len(a), -1)).sum(1) for a, s in recorder.nodes(ref)])
    order = np.argsort(alphas)
    a, g = alphas[order], slopes[order]
    cum = np.concatenate([[0.0], np.cumsum(g)]) / max(g.sum(), 1e-300)
    best = (0.0, 1.0)
    for i in range(len(a)):
        j = int(np.searchsorted(cum, cum[i] + 0.5))
        if j <= len(a) and a[j - 1] - a[i] < best[1] - best[0]:
            best = (float(a[i]), float(a[j - 1]))
    return {
        "half_from": best[0],
        "half_to": best[1],
        "peak_over_mean": float(g.max() / max(g.mean(), 1e-300)),
    }


def diagnose(model, q, pool, cfg, pad_id: int, segments: int) -> dict:
    """One question: its certified row's figures, per reference (with its swing) and per segment."""
    seen: dict = {}
    certify = estimators.certify

    def recording(evaluate, gap, spec, seed):
        seen["recorder"], seen["gap"] = Recorder(), gap
        return certify(seen["recorder"].wrap(evaluate), gap, spec, seed)

    estimators.certify = recording
    try:
        result = attribute_question(model, q, pool, cfg.attribution, pad_id)
    finally:
        estimators.certify = certify
    (row,), trace = result.rows, result.traces[0]
    refs = per_reference(seen["recorder"], seen["gap"])
    shape = [swing(seen["recorder"], r) for r in range(len(refs))]
    for key in shape[0]:
        refs[key] = [s[key] for s in shape]
    return {
        "question": q.record_id,
        "grad_evals": int(row.grad_evals),
        "residual": float(row.residual),
        "budget_exhausted": bool(row.budget_exhausted),
        "final_measures": dict(zip(TRACE_COLUMNS[1:4], trace[-1, 1:4].tolist(), strict=True)),
        "references": refs.to_dict("records"),
        "segments": per_segment(seen["recorder"], len(refs), segments).to_dict("records"),
    }


def main() -> None:
    parser = experiment_parser(__doc__, "local", 1)
    parser.add_argument("--refs", type=int, default=16)
    parser.add_argument("--budget", type=int, default=1024)
    parser.add_argument("--segments", type=int, default=8)
    parser.add_argument("--out", default="results/bench/certified_where.json")
    args = parser.parse_args()
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    at = replace(
        cfg.attribution,
        reference="train",
        refs_per_collection=args.refs,
        n_collections=1,
        max_questions=0,
        progress=False,
        method="certified",
        certified_max_evals=args.budget,
        max_grad_evals=max(cfg.attribution.max_grad_evals, args.budget),
        samples_per_call=16,
    )
    cfg = replace(cfg, attribution=at)
    questions, pool = explained_questions(model, prompts, at, args.questions)
    found = []
    for q in questions:
        found.append(diagnose(model, q, pool, cfg, pad_id, args.segments))
        print(json.dumps(found[-1], indent=1), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
