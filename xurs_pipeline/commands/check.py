"""``xurs check``: validate params.yaml (every key, type and range) before running anything.

Validate the composed config (params.yaml) against the structured schema: unknown or misspelt keys, wrong
types and values out of range fail with the key's name, as do local MedQA files that are missing and
``attribution.record_ids`` that name no prepared record; nothing is run. The pipeline's first DVC stage
(`check`) runs this, so a bad `dvc exp run -S ...` stops before any stage deletes an output. Without DVC:
`xurs check && dvc repro`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xurs_pipeline.commands.args import PARAMS_HELP, command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run, params=PARAMS_HELP)
    p.add_argument(
        "--stamp",
        metavar="FILE",
        help="on success, write this small JSON file (the `check` stage's output; its content does not "
        "change with the config, so it invalidates nothing downstream)",
    )


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.tasks.check import check_params  # what the check stage runs

    check_params(Path(args.params), Path(args.stamp) if args.stamp else None)
    return 0
