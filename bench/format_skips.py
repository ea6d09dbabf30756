"""Count the lines that opt out of ``ruff format`` with a skip comment (the house rule: only data tables,
where alignment helps reading, at most 30 lines in xurs_pipeline/, bench/ and tests/ together).

    python bench/format_skips.py                 # the count and each line, over xurs_pipeline/ bench/ tests/
    python bench/format_skips.py --max 30        # exit 1 when more lines have the marker
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("xurs_pipeline", "bench", "tests")
# ruff's marker (``fmt:``, optional space, ``skip``), spelled so that a grep for it finds marked lines only
MARKER = re.compile(r"fmt:\s*skip")


def skipped_lines(source: str) -> list[int]:
    """The line numbers of ``source`` whose comment holds the skip marker (in a string it is text, not a
    marker)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [t.start[0] for t in tokens if t.type == tokenize.COMMENT and MARKER.search(t.string)]


def tree_skips(root: Path, folders: tuple[str, ...] = FOLDERS) -> list[str]:
    """``path:line`` of every marked line of every ``.py`` file under ``root``'s ``folders``."""
    found = []
    for folder in folders:
        for file in sorted((root / folder).rglob("*.py")):
            where = file.relative_to(root)
            found += [f"{where}:{n}" for n in skipped_lines(file.read_text(encoding="utf-8"))]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=ROOT, help="the checkout (default: this one)")
    parser.add_argument("--max", type=int, help="exit 1 when more lines have the marker")
    args = parser.parse_args(argv)
    found = tree_skips(args.root)
    print(f"lines with a format skip comment: {len(found)}")
    print("\n".join(f"  {where}" for where in found))
    return 1 if args.max is not None and len(found) > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
