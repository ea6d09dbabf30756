"""Benchmark 8c: how many training references the clue needs (App. C) at App. B.4's tolerance.

    python bench/bench_references.py [--experiment controlled_direct_kronrod] [--override KEY=VALUE ...] \
        [--questions 8] [--skip 0] [--refs 4 16] [--evals-per-ref 300]

EG's expectation over training prompts (Eq. 3) is an average over references; the paper's clue example
averages 128 (App. C), the CPU clue study 4. For each ``--refs`` count M (``attribution.refs_per_collection``)
the ``kronrod`` estimator attributes the explained width of the experiment's questions (after skipping
``--skip``; the positive control's test questions without the result, prepared and selected as the
``attribute`` stage does) with ``--evals-per-ref`` x M gradient evaluations. Per question and M: the
completeness residual R (Eq. 9), the estimator's bound, evaluations, wall time, the best clue token's rank
in the case text and in all text, and the clue's share of the case text's magnitude; then per M the median
and max R and the share of questions whose clue ranks first in the case text (issue 23's target: >= 80%).
Prints Markdown tables with the load average before and after.
Needs the trained model (`xurs params experiment=local && dvc repro train`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _trained import clue_measures, experiment_parser, explained_questions, load

from xurs_pipeline.attribution.methods import attribute_question


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_direct_kronrod", 8)
    parser.add_argument("--skip", type=int, default=0, help="questions to skip first (in the stage's order)")
    parser.add_argument("--refs", type=int, nargs="+", default=[4, 16], help="references per question (M)")
    parser.add_argument("--evals-per-ref", type=int, default=300, help="kronrod's budget per reference")
    args = parser.parse_args()
    C.print_header("Clue localisation against the number of training references", " ".join(sys.argv))
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    table, rows = [], []
    for m in args.refs:
        at = replace(
            cfg.attribution,
            progress=False,
            method="kronrod",
            refs_per_collection=m,
            kronrod_max_evals=args.evals_per_ref * m,
        )
        questions, pool = explained_questions(model, prompts, at, args.skip + args.questions)
        for q in questions[args.skip :]:
            start = time.perf_counter()
            row = attribute_question(model, q, pool, at, pad_id).rows[0]
            seconds = time.perf_counter() - start
            clue = clue_measures(row, prompts)
            rows.append({"refs": m, "residual": row.residual, **clue})
            table.append(
                (
                    q.record_id,
                    m,
                    f"{row.residual:.5f}",
                    f"{row.error_bound:.4f}",
                    row.grad_evals,
                    clue["case_rank"],
                    f"{100 * clue['clue_share']:.0f}%",
                    clue["text_rank"],
                    f"{seconds:.0f}",
                )
            )
            print(f"  {' | '.join(map(str, table[-1]))} (load {C.load_average()})", flush=True)
    print(
        C.markdown_table(
            [
                "question",
                "references",
                "R",
                "bound",
                "gradient evaluations",
                "clue rank, case text",
                "clue share, case text",
                "clue rank, all text",
                "s",
            ],
            table,
        )
    )
    summary = [
        (
            m,
            len(g),
            f"{g.residual.median():.5f}",
            f"{g.residual.max():.5f}",
            f"{(g.case_rank == 1).sum()} / {len(g)}",
            f"{100 * g.clue_share.mean():.0f}%",
        )
        for m, g in pd.DataFrame(rows).groupby("refs", sort=False)
    ]
    print()
    print(
        C.markdown_table(
            [
                "references",
                "questions",
                "median R",
                "max R",
                "clue first in the case text",
                "mean clue share, case text",
            ],
            summary,
        )
    )
    print(f"\nload average at end: {C.load_average()}")


if __name__ == "__main__":
    main()
