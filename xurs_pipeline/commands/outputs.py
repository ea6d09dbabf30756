"""``xurs outputs``: generate docs/outputs.md (every file a run writes) from xurs_pipeline/contracts.py.

Write the page listing every file and folder a run writes (data/, results/, metrics, tables, plots, the
report), the stage that writes it and what it holds, from the artifact declarations in
xurs_pipeline/contracts.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xurs_pipeline.commands.args import command
from xurs_pipeline.io import atomic_path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run)
    p.add_argument("--out", default="docs/outputs.md", help="file to write (default: docs/outputs.md)")
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if --out is not current")


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.outputs import outputs_markdown

    out, text = Path(args.out), outputs_markdown()
    if args.check:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            print(f"{out} is not what the contracts generate: run `xurs outputs` to refresh it.")
            return 1
        print(f"{out} matches the contracts.")
        return 0
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0
