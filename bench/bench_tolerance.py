"""Benchmark 8: gradient evaluations to App. B.4's tolerance over training references on the trained model.

    python bench/bench_tolerance.py [--experiment controlled_direct_kronrod] [--override KEY=VALUE ...] \
        [--questions 2] [--eg-samples 64] [--ig-points 16 64] [--kronrod-budget 0]

For the first ``--questions`` questions the experiment explains (the positive control's test questions without
the result, its training references, exactly as the ``attribute`` stage selects and prepares them), side by
side on the same questions and references:

- EG (Eq. 3) with ``--eg-samples`` draws: its completeness residual R (Eq. 9) and its own 95% half-width; from
  the draws' spread s, the draws EG needs for a 95% half-width of 0.01, (1.96 s / 0.01)^2 (EG's error shrinks
  as 1/sqrt(n): the projection, not a run, because it is millions of draws);
- fixed Gauss-Legendre IG at each of ``--ig-points`` per reference: R and evaluations;
- ``kronrod``: read from the experiment's own ``attribute`` output (``attributions.parquet``: evaluations, R,
  its bound, budget flag) when it has run, else run here with ``--kronrod-budget`` evaluations.

Criterion (App. B.4): median R <= 0.01, max R <= 0.05 over the questions. Prints a Markdown table per question
and the ratio of EG's projected draws to kronrod's evaluations, with the load average before and after.
Needs the trained model (`xurs params experiment=... && dvc repro train`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _trained import experiment_parser, explained_questions, load

from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.contracts import artifact

Z_95 = 1.959963984540054
TOLERANCE = 0.01


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_direct_kronrod", 2)
    parser.add_argument("--eg-samples", type=int, default=64)
    parser.add_argument("--ig-points", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--kronrod-budget", type=int, default=0, help="run kronrod here (0: the stage's)")
    args = parser.parse_args()
    C.print_header("Evaluations to tolerance over training references", " ".join(sys.argv))
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    at = replace(cfg.attribution, progress=False)
    questions, pool = explained_questions(model, prompts, at, args.questions)
    stage = artifact("attributions").at(cfg.paths)
    use_stage = stage.is_file() and not args.kronrod_budget
    done = pd.read_parquet(stage).set_index("record_id") if use_stage else None
    variants = [(f"EG {args.eg_samples} draws", replace(at, method="eg", n_samples=args.eg_samples))]
    variants += [
        (f"IG {n} points/ref", replace(at, method="ig", ig_points=n, ig_adaptive=False, ig_max_points=n))
        for n in args.ig_points
    ]
    if done is None:
        variants.append(
            ("kronrod (run here)", replace(at, method="kronrod", kronrod_max_evals=args.kronrod_budget))
        )
    table, ratios = [], []
    for q in questions:
        for label, variant in variants:
            start = time.perf_counter()
            row = attribute_question(model, q, pool, variant, pad_id).rows[0]
            seconds = time.perf_counter() - start
            note = ""
            if variant.method == "eg":
                spread = row.error_bound * np.sqrt(row.grad_evals) / Z_95  # the draws' standard deviation
                needed = (Z_95 * spread / TOLERANCE) ** 2
                note = f"s = {spread:.2f}: ~{needed:,.0f} draws for a 95% half-width of {TOLERANCE}"
                eg_needed = needed
            if variant.method == "kronrod":
                note = f"bound {row.error_bound:.4f}, budget out: {row.budget_exhausted}"
            table.append((q.record_id, label, row.grad_evals, f"{row.residual:.4f}", f"{seconds:.0f}", note))
        if done is not None and q.record_id in done.index:
            k = done.loc[[q.record_id]].iloc[0]
            note = f"bound {k['error_bound']:.4f}, budget out: {bool(k['budget_exhausted'])}"
            table.append(
                (
                    q.record_id,
                    "kronrod (the attribute stage)",
                    int(k["grad_evals"]),
                    f"{k['residual']:.4f}",
                    "-",
                    note,
                )
            )
        kronrod_evals = table[-1][2]
        ratios.append(eg_needed / kronrod_evals)
        print(f"  done {q.record_id} (load {C.load_average()})", flush=True)
    print(C.markdown_table(["question", "estimator", "gradient evaluations", "R", "s", "note"], table))
    print(f"\nEG's projected draws / kronrod's evaluations: {', '.join(f'{r:,.0f}x' for r in ratios)}")
    print(f"load average at end: {C.load_average()}")


if __name__ == "__main__":
    main()
