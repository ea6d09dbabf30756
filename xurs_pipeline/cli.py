"""The ``xurs`` command line: one sub-command per module in ``xurs_pipeline.commands``.

Heavy imports (torch, transformers) happen inside each command's ``run`` so ``xurs --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# The commands, in the order of `xurs --help`; each one's module is its name with "_" for "-", but for
# the two that rebuild a stage's outputs (MODULES).
COMMANDS = (
    "params",
    "check",
    "dvc-yaml",
    "plan",
    "explain",
    "tables",
    "report",
    "gates-sweep",
    "swap-sweep",
    "sweep",
    "outputs",
)
MODULES = {"tables": "rebuild", "report": "rebuild"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xurs",
        description=(
            "XU-RS: explain why a random-set language-model classifier is uncertain, by attributing the "
            "credal width of its answer to input tokens. The full pipeline runs with `dvc repro`; these "
            "commands compose configs, explain single questions, rebuild tables and reports and compare "
            "training sweeps on the controlled-model gates."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = dict.fromkeys(MODULES.get(name, name.replace("-", "_")) for name in COMMANDS)
    for module in modules:  # each adds its commands' parsers
        importlib.import_module(f"xurs_pipeline.commands.{module}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from xurs_pipeline.errors import XursError

    try:
        return int(args.run(args) or 0)
    # Project errors, and the ValueError / FileNotFoundError commands raise on bad arguments, become one
    # line; anything else (a torch RuntimeError, a bug) keeps its traceback.
    except (XursError, ValueError, FileNotFoundError) as err:
        print(f"xurs {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
