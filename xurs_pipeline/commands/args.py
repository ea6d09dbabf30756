"""argparse types for the commands' numeric options: a bad value is argparse's one-line usage error
(exit 2) naming the option, never a negative, zero or NaN size read as if it meant something."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


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
