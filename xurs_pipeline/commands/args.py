"""What the ``xurs`` sub-commands share: the factory of their parsers (:func:`command`, :func:`parser`),
and argparse types for their numeric options: a bad value is argparse's one-line usage error (exit 2)
naming the option, never a negative, zero or NaN size read as if it meant something."""

from __future__ import annotations

import argparse
import inspect
import math
from collections.abc import Callable
from typing import Any

Run = Callable[[argparse.Namespace], int]
PARAMS_HELP = "composed config (default: params.yaml)"


def parser(
    sub: argparse._SubParsersAction, name: str, run: Run, help: str, params: str | None = None, **kw: Any
) -> argparse.ArgumentParser:
    """The parser of sub-command ``name``: its one-line ``help``, other ``add_parser`` keywords in ``kw``
    (``description``), ``run`` as what it does, and with ``params`` (the option's help) a ``--params``
    option naming the composed config (default ``params.yaml``). ``overrides=(nargs, help)`` in ``kw``
    adds the Hydra overrides (positional) and ``--conf``, the config directory they compose."""
    overrides = kw.pop("overrides", None)
    p = sub.add_parser(name, help=help, **kw)
    if overrides is not None:
        p.add_argument("overrides", nargs=overrides[0], help=overrides[1])
        p.add_argument("--conf", default="conf", help="config directory (default: conf)")
    if params is not None:
        p.add_argument("--params", default="params.yaml", help=params)
    p.set_defaults(run=run)
    return p


def command(
    sub: argparse._SubParsersAction, doc: str | None, run: Run, params: str | None = None, **kw: Any
) -> argparse.ArgumentParser:
    r"""The parser of the sub-command whose module docstring is ``doc``: a first paragraph
    ``\`\`xurs NAME\`\`: HELP.`` (the command's name and one-line help), then its description; the rest as
    :func:`parser`. ValueError for a docstring of another form (a test runs every command's)."""
    head, _, description = inspect.cleandoc(doc or "").partition("\n\n")
    name, sep, help = " ".join(head.split()).removeprefix("``xurs ").partition("``: ")
    if not sep or not name or " " in name:
        raise ValueError(f"a command module's docstring starts with '``xurs NAME``: help.', not {head!r}")
    return parser(sub, name, run, help.removesuffix("."), params, description=description, **kw)


def number(cast: type[int] | type[float], low: float, what: str) -> Callable[[str], int | float]:
    """An argparse type: ``text`` as ``cast``, finite and >= ``low`` (``what`` says so in the error)."""

    def parse(text: str) -> int | float:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if cast is int else 'a number'}"
            ) from None
        if not math.isfinite(value) or value < low:
            raise argparse.ArgumentTypeError(f"{text} must be {what}")
        return value

    return parse


positive_int = number(int, 1, "a positive integer")  # ``--top -5`` is refused, not read as "all but five"
non_negative_int = number(int, 0, "an integer >= 0")
positive_float = number(float, math.ulp(0.0), "a finite number > 0")
