"""``xurs tables`` and ``xurs report``: rebuild an experiment's tables and plots, or its HTML pages, from
its artifacts (:mod:`xurs_pipeline.tasks.tables` and :mod:`xurs_pipeline.tasks.report`, the two stages'
tasks, on the composed config of ``--params``), only when those artifacts were made with that config: in a
DVC project, the ``dvc.lock`` entry of each stage that wrote one must hold ``--params``' values
(:mod:`xurs_pipeline.experiments.lock`), or the tables would show the old numbers under the new settings
and replace DVC-tracked outputs with them."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from xurs_pipeline.commands.args import PARAMS_HELP, parser
from xurs_pipeline.contracts import STAGES as PIPELINE
from xurs_pipeline.contracts import artifact

# stage: (one-line help, description)
STAGES = {
    "tables": (
        "rebuild the paper tables and plots from artifacts",
        "Write the paper's tables (1 zero-masking effects, 2 numerical checks, 3 reference endpoints, "
        "4-5 settings, 8 correction, 9 clue localisation, 10 fit errors, accuracy/AUROC, "
        "controlled-model gates, verdicts) as Markdown, LaTeX and CSV under <paths.results>/tables, "
        "and the plots under <paths.results>/plots, "
        "from the artifacts of the experiment in params.yaml. Same as the `tables` stage of `dvc repro`; "
        "refused when params.yaml has moved on since the artifacts were made (run `dvc repro`).",
    ),
    "report": (
        "rebuild the HTML explanation pages from artifacts",
        "Write one HTML page per explained question (tokens shaded by width attribution, the [Bel, Pl] "
        "interval of every option, masses, section shares, checks) and an index page under "
        "<paths.results>/html, from the artifacts of the experiment in params.yaml. Same as the "
        "`report` stage of `dvc repro`; refused when params.yaml has moved on since the artifacts were "
        "made (run `dvc repro`).",
    ),
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    for stage, (help, description) in STAGES.items():
        parser(sub, stage, run, help, PARAMS_HELP, description=description)


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.config import load_params

    check_made_with(args.command, Path(args.params), Path.cwd())
    importlib.import_module(f"xurs_pipeline.tasks.{args.command}").run(load_params(args.params))
    return 0


def check_made_with(stage: str, params: Path, project: Path) -> None:
    """ValueError naming the first input of ``stage`` whose writer's entry in ``project``'s ``dvc.lock`` is
    not from a run under ``params``; nothing to check without a ``dvc.lock`` (a project run by
    ``run_pipeline``) or for a writer it does not list."""
    from xurs_pipeline.experiments.lock import load_yaml, not_run, read_lock
    from xurs_pipeline.experiments.show import WORKSPACE, flatten

    if not (project / "dvc.lock").is_file() or not params.is_file():
        return
    lock = read_lock(WORKSPACE, project)
    values = flatten(load_yaml(params.read_text(encoding="utf-8")) or {})
    for name in PIPELINE[stage].reads:
        writer = artifact(name).writer
        why = not_run(lock, values, writer) if writer in lock else ""
        if why:
            raise ValueError(
                f"{params} has moved on since {artifact(name).path} was made ({why}): the {stage} would show "
                f"its numbers under the new settings; run `dvc repro {stage}` first"
            )
