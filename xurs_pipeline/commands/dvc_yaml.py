"""``xurs dvc-yaml``: generate dvc.yaml from xurs_pipeline/contracts.py.

Write dvc.yaml from the stage and artifact declarations in xurs_pipeline/contracts.py: code deps are each
stage's project imports (static), params the keys it reads. Only two settings of params.yaml shape it
(data.source=medqa adds the MedQA directory to prepare; evaluation.comparison_runs adds the runs checks
reads), so `xurs params` runs this too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from xurs_pipeline.commands.args import PARAMS_HELP, command
from xurs_pipeline.io import atomic_path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run, params=PARAMS_HELP)
    p.add_argument("--out", default="dvc.yaml", help="file to write (default: dvc.yaml)")
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if --out is not current")


def write(composed: dict, out: Path, check: bool = False) -> int:
    """Write (or with ``check`` compare) ``out`` for the project beside it; returns the exit status."""
    from xurs_pipeline.dvc_yaml import render

    text = render(composed, out.resolve().parent)
    if check:
        if not out.is_file() or out.read_text() != text:
            print(f"{out} is not what the declarations generate: run `xurs dvc-yaml` to refresh it.")
            return 1
        print(f"{out} matches the declarations.")
        return 0
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    print(f"wrote {out}")
    return 0


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.errors import XursError

    params = Path(args.params)
    if not params.is_file():
        raise XursError(f"{params}: not found. Compose it with `xurs params` first.")
    return write(yaml.safe_load(params.read_text()), Path(args.out), args.check)
