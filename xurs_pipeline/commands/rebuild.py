"""``xurs tables`` and ``xurs report``: rebuild an experiment's tables and plots, or its HTML pages, from
its artifacts (:mod:`xurs_pipeline.tasks.tables` and :mod:`xurs_pipeline.tasks.report`, the two stages'
tasks, on the composed config of ``--params``)."""

from __future__ import annotations

import argparse

from xurs_pipeline.commands.args import stage_command

# stage: (one-line help, description)
STAGES = {
    "tables": (
        "rebuild the paper tables and plots from artifacts",
        "Write the paper's tables (1 zero-masking effects, 2 numerical checks, 3 reference endpoints, "
        "4-5 settings, 8 correction, 9 clue localisation, 10 fit errors, accuracy/AUROC, "
        "controlled-model gates, verdicts) as Markdown, LaTeX and CSV under <paths.results>/tables, "
        "and the plots under <paths.results>/plots, "
        "from the artifacts of the experiment in params.yaml. Same as the `tables` stage of `dvc repro`.",
    ),
    "report": (
        "rebuild the HTML explanation pages from artifacts",
        "Write one HTML page per explained question (tokens shaded by width attribution, the [Bel, Pl] "
        "interval of every option, masses, section shares, checks) and an index page under "
        "<paths.results>/html, from the artifacts of the experiment in params.yaml. Same as the "
        "`report` stage of `dvc repro`.",
    ),
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    for stage, (help, description) in STAGES.items():
        stage_command(sub, stage, help, description)
