"""``xurs tables``: rebuild the paper tables and plots of an experiment from its artifacts
(:mod:`xurs_pipeline.tasks.tables`, the ``tables`` stage's task)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tables",
        help="rebuild the paper tables and plots from artifacts",
        description=(
            "Write the paper's tables (1 zero-masking effects, 2 numerical checks, 3 reference endpoints, "
            "4-5 settings, 8 correction, 9 clue localisation, 10 fit errors, accuracy/AUROC, "
            "controlled-model gates, verdicts) as Markdown, LaTeX and CSV under <paths.results>/tables, "
            "and the plots under <paths.results>/plots, "
            "from the artifacts of the experiment in params.yaml. Same as the `tables` stage of `dvc repro`."
        ),
    )
    p.add_argument("--params", default="params.yaml", help="composed config (default: params.yaml)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.config import load_params
    from xurs_pipeline.tasks import tables

    tables.run(load_params(args.params))
    return 0
