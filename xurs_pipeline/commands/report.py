"""``xurs report``: rebuild the HTML explanation pages of an experiment from its artifacts
(:mod:`xurs_pipeline.tasks.report`, the ``report`` stage's task)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild the HTML explanation pages from artifacts",
        description=(
            "Write one HTML page per explained question (tokens shaded by width attribution, the [Bel, Pl] "
            "interval of every option, masses, section shares, checks) and an index page under "
            "<paths.results>/html, from the artifacts of the experiment in params.yaml. Same as the "
            "`report` stage of `dvc repro`."
        ),
    )
    p.add_argument("--params", default="params.yaml", help="composed config (default: params.yaml)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.config import load_params
    from xurs_pipeline.tasks import report

    report.run(load_params(args.params))
    return 0
