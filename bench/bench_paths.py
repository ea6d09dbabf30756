"""Benchmark 8b: the straight path against block paths (``attribution.path``) on the trained positive control.

    python bench/bench_paths.py [--experiment controlled_direct_kronrod] [--override KEY=VALUE ...] \
        [--questions 3] [--blocks 16] [--budget 1200]

For the first ``--questions`` questions the experiment explains (the positive control's test questions
without the result, against its training references, prepared and selected as the ``attribute`` stage
does), the ``kronrod`` estimator to the experiment's tolerance with ``--budget`` gradient evaluations per
question, once on the straight path B -> X (Eq. 3, 5) and once per ``--blocks`` size on the block path (one
block of that many positions at a time, left to right, ``attribution/paths.py``). Per question and path:
the completeness residual R (Eq. 9), the estimator's own bound, gradient evaluations, whether the budget
ran out, the roughness of the path (total variation of the width along it against the net change), wall
time, and where the clue ranks (App. C, ``evaluation.evidence.localisation_table``: the best clue token's
rank in the case text and in all text, the clue's share of the case text's magnitude). Prints Markdown
tables with the load average before and after.
Needs the trained model (`xurs params experiment=local && dvc repro train`).
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
from _trained import clue_measures, experiment_parser, explained_questions, load

from xurs_pipeline.attribution.methods import attribute_question


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_direct_kronrod", 3)
    parser.add_argument("--blocks", type=int, nargs="+", default=[16], help="block sizes (positions)")
    parser.add_argument("--budget", type=int, default=1200, help="kronrod's gradient evaluations a question")
    args = parser.parse_args()
    C.print_header("Straight against block paths to tolerance", " ".join(sys.argv))
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    at = replace(cfg.attribution, progress=False, method="kronrod", kronrod_max_evals=args.budget)
    questions, pool = explained_questions(model, prompts, at, args.questions)
    variants = [("straight", replace(at, path="straight"))]
    variants += [(f"blocks of {b}", replace(at, path="blocks", path_block=b)) for b in args.blocks]
    table, rows = [], []
    for q in questions:
        for label, variant in variants:
            start = time.perf_counter()
            row = attribute_question(model, q, pool, variant, pad_id).rows[0]
            seconds = time.perf_counter() - start
            clue = clue_measures(row, prompts)
            rows.append(
                {
                    "path": label,
                    "residual": row.residual,
                    "bound": row.error_bound,
                    "evals": row.grad_evals,
                    "roughness": row.roughness,
                    **clue,
                }
            )
            table.append(
                (
                    q.record_id,
                    label,
                    f"{row.residual:.5f}",
                    f"{row.error_bound:.4f}",
                    row.grad_evals,
                    "yes" if row.budget_exhausted else "no",
                    f"{row.roughness:.1f}",
                    clue["case_rank"],
                    f"{100 * clue['clue_share']:.0f}%",
                    clue["text_rank"],
                    f"{seconds:.0f}",
                )
            )
        print(f"  done {q.record_id} (load {C.load_average()})", flush=True)
    print(
        C.markdown_table(
            [
                "question",
                "path",
                "R",
                "bound",
                "gradient evaluations",
                "budget out",
                "roughness",
                "clue rank, case text",
                "clue share, case text",
                "clue rank, all text",
                "s",
            ],
            table,
        )
    )
    frame = pd.DataFrame(rows)
    summary = [
        (
            label,
            f"{g.residual.median():.5f}",
            f"{g.residual.max():.5f}",
            f"{g.bound.median():.4f}",
            f"{g.evals.median():.0f}",
            f"{g.roughness.median():.1f}",
            f"{(g.case_rank == 1).sum()} / {len(g)}",
            f"{100 * g.clue_share.mean():.0f}%",
        )
        for label, g in frame.groupby("path", sort=False)
    ]
    print()
    print(
        C.markdown_table(
            [
                "path",
                "median R",
                "max R",
                "median bound",
                "median evaluations",
                "median roughness",
                "clue first in the case text",
                "mean clue share, case text",
            ],
            summary,
        )
    )
    print(f"\nload average at end: {C.load_average()}; mean rank-1 share {np.mean(frame.case_rank == 1):.2f}")


if __name__ == "__main__":
    main()
