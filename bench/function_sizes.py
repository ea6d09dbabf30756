"""Count the long functions and the long parameter lists of a package (the house rule: < 50 lines), the
functions of 40-49 lines that are one edit away from it, and the lines of the whole package.

A function's length is its ``def`` line through its last line (decorators left out, docstring and
comments counted: what a reader scrolls through); its parameters are every name it takes, ``*args`` and
``**kwargs`` included, ``self`` and ``cls`` left out. Methods and nested functions count on their own. The
package's lines are those of its ``.py`` files, blank ones and comments included (``wc -l``).

    python bench/function_sizes.py                  # xurs_pipeline/, the counts and each offender
    python bench/function_sizes.py --max-long 8 --max-wide 4 --max-band 22   # exit 1 when a count is over
    python bench/function_sizes.py xurs_pipeline/evaluation/swap --max-lines 2069   # exit 1 when larger
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
LONG_LINES = 50
WIDE_PARAMS = 8
BAND_LINES = 40  # the band: BAND_LINES to LONG_LINES - 1 lines


class Function(NamedTuple):
    """One ``def`` of a file: where it is, how many lines and parameters it has."""

    path: str
    name: str
    line: int
    lines: int
    params: int


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Every parameter name of ``node`` but a leading ``self``/``cls``."""
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    if names and names[0] in ("self", "cls") and (a.posonlyargs or a.args):
        names = names[1:]
    return len(names)


def functions(source: str, path: str) -> list[Function]:
    """Every function and method defined in ``source`` (nested ones included), in file order."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            found.append(Function(path, node.name, node.lineno, lines, parameter_count(node)))
    return sorted(found, key=lambda f: f.line)


def package_functions(package: Path) -> list[Function]:
    """Every function of every ``.py`` file under ``package``, paths relative to its parent."""
    found = []
    for file in sorted(package.rglob("*.py")):
        found += functions(file.read_text(encoding="utf-8"), str(file.relative_to(package.parent)))
    return found


def package_lines(package: Path) -> int:
    """The lines of every ``.py`` file under ``package``, as ``wc -l`` counts them (newlines)."""
    return sum(file.read_text(encoding="utf-8").count("\n") for file in package.rglob("*.py"))


class Sizes(NamedTuple):
    """The long functions, the wide ones, those of the band below the long ones, and the printed report."""

    long: list[Function]
    wide: list[Function]
    band: list[Function]
    text: str


def _listed(title: str, found: list[Function], size: str) -> list[str]:
    return [f"{title}: {len(found)}"] + [
        f"  {getattr(f, size):4d} {size:6s} {f.path}:{f.line} {f.name}" for f in found
    ]


def report(found: list[Function]) -> Sizes:
    """The long functions, the wide ones and the band of 40-49 lines, each longest or widest first."""
    long = sorted((f for f in found if f.lines >= LONG_LINES), key=lambda f: -f.lines)
    wide = sorted((f for f in found if f.params >= WIDE_PARAMS), key=lambda f: -f.params)
    band = sorted((f for f in found if BAND_LINES <= f.lines < LONG_LINES), key=lambda f: -f.lines)
    out = _listed(f"functions of {LONG_LINES}+ lines", long, "lines")
    out += _listed(f"functions with {WIDE_PARAMS}+ parameters", wide, "params")
    out += _listed(f"functions of {BAND_LINES}-{LONG_LINES - 1} lines", band, "lines")
    return Sizes(long, wide, band, "\n".join(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", type=Path, default=ROOT / "xurs_pipeline")
    parser.add_argument("--max-long", type=int, help=f"exit 1 when more functions have {LONG_LINES}+ lines")
    parser.add_argument("--max-wide", type=int, help=f"exit 1 when more have {WIDE_PARAMS}+ parameters")
    parser.add_argument(
        "--max-band", type=int, help=f"exit 1 when more have {BAND_LINES}-{LONG_LINES - 1} lines"
    )
    parser.add_argument("--max-lines", type=int, help="exit 1 when the package's .py files hold more lines")
    args = parser.parse_args(argv)
    sizes, lines = report(package_functions(args.package)), package_lines(args.package)
    print(f"{sizes.text}\nlines of .py files: {lines}")
    limits = ((args.max_long, sizes.long), (args.max_wide, sizes.wide), (args.max_band, sizes.band))
    larger = args.max_lines is not None and lines > args.max_lines
    return 1 if larger or any(limit is not None and len(found) > limit for limit, found in limits) else 0


if __name__ == "__main__":
    sys.exit(main())
