"""Benchmark: gradient evaluations and seconds per certified question in the swap control.

    python bench/bench_swap_cost.py [--experiment controlled_swap] [--questions 2] \
        [--variant NAME:refs=4,max=1200 ...]

A question is certified when kronrod's own error bound meets ``attribution.kronrod_tolerance`` within its
budget (App. B.4 through the bound, not only the residual). Each variant sets the references per question
(``refs``), the evaluation budget (``max``) and the tolerance (``tol``); the first is the baseline, the
clue study's settings (``controlled_direct_kronrod_sequence``: 4 sequence-aligned training references,
tolerance 0.01, at most 1,200 evaluations). Both trained models (A: ``train``, B: ``train_swap``) explain
the first ``--questions`` probes under every variant, the variants interleaved per question (order rotated)
so that load drifts cancel in the per-question ratios. Prints per (model, question, variant) the residual,
bound, evaluations and seconds, then per variant the medians and the ratios to the baseline, with the load
average before and after. Needs `xurs params experiment=controlled_swap && dvc repro train_swap`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _trained import experiment_parser, explained_questions, load

from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.config import train_run_hash
from xurs_pipeline.evaluation.swap.roles import ROLES
from xurs_pipeline.models.checkpoint import load_classifier

DEFAULT_VARIANTS = ["baseline:refs=4,max=1200,tol=0.01", "swap:refs=2,max=600,tol=0.01"]


def parse_variant(text: str) -> tuple[str, dict[str, float]]:
    name, _, spec = text.partition(":")
    values = dict(part.split("=") for part in spec.split(",") if part)
    return name, {
        "refs": int(values.get("refs", 4)),
        "max": int(values.get("max", 1200)),
        "tol": float(values.get("tol", 0.01)),
    }


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_swap", 2)
    parser.add_argument("--variant", nargs="+", default=DEFAULT_VARIANTS, help="NAME:refs=R,max=M,tol=T")
    args = parser.parse_args()
    C.print_header("Swap control: evaluations and seconds per certified question", " ".join(sys.argv))
    model_a, prompts, cfg, pad_id = load(args.experiment, args.override)
    model_b, _ = load_classifier(ROLES["B"].classifier_dir(cfg.paths), config_hash=train_run_hash(cfg))
    models = {"A": model_a, "B": model_b.eval().requires_grad_(False)}
    variants = dict(parse_variant(v) for v in args.variant)
    settings = {
        name: replace(
            cfg.attribution,
            progress=False,
            method="kronrod",
            refs_per_collection=v["refs"],
            kronrod_max_evals=v["max"],
            kronrod_tolerance=v["tol"],
        )
        for name, v in variants.items()
    }
    table, results = [], {name: [] for name in variants}
    names = list(variants)
    for role, model in models.items():
        prepared = {n: explained_questions(model, prompts, at, args.questions) for n, at in settings.items()}
        for k in range(args.questions):
            for name in names[k % len(names) :] + names[: k % len(names)]:  # rotate the order
                questions, pool = prepared[name]
                start = time.perf_counter()
                row = attribute_question(model, questions[k], pool, settings[name], pad_id).rows[0]
                seconds = time.perf_counter() - start
                certified = row.error_bound <= settings[name].kronrod_tolerance and not row.budget_exhausted
                results[name].append((row.grad_evals, seconds, certified, abs(row.residual)))
                table.append(
                    (
                        role,
                        questions[k].record_id,
                        name,
                        f"{row.residual:.5f}",
                        f"{row.error_bound:.4f}",
                        "yes" if certified else "no",
                        row.grad_evals,
                        f"{seconds:.1f}",
                    )
                )
                print(f"  {' | '.join(map(str, table[-1]))} (load {C.load_average()})", flush=True)
    print(
        C.markdown_table(
            ["model", "question", "variant", "R", "bound", "certified", "evaluations", "s"], table
        )
    )
    base = names[0]
    summary = []
    for name in names:
        evals, secs, certified, res = (np.array(x) for x in zip(*results[name], strict=True))
        base_evals, base_secs = (np.array([r[i] for r in results[base]]) for i in (0, 1))
        summary.append(
            (
                name,
                f"{int(certified.sum())} of {certified.size}",
                f"{np.median(evals):.0f}",
                f"{np.median(secs):.1f}",
                f"{np.median(res):.5f}",
                f"{np.max(res):.5f}",
                f"{np.median(evals / base_evals):.2f}",
                f"{np.median(secs / base_secs):.2f}",
            )
        )
    print(
        C.markdown_table(
            [
                "variant",
                "certified",
                "evaluations per question (median)",
                "s per question",
                "median R",
                "max R",
                "evaluations / baseline",
                "s / baseline",
            ],
            summary,
        )
    )
    print(f"\nload average after: {C.load_average()}")


if __name__ == "__main__":
    main()
