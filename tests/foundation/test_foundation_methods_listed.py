"""Every attribution method the code accepts (``attribution.config.METHODS``) is named where a user chooses
one: ``xurs explain --help``, the methods table of docs/attribution-methods.md, the `attribution.method` list
of docs/configuration.md and README's glossary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xurs_pipeline.attribution.config import METHODS
from xurs_pipeline.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def unnamed(text: str) -> list[str]:
    """The methods of METHODS that ``text`` does not name in backticks or as a word of a list."""
    return [m for m in METHODS if not re.search(rf"(?<![\w-]){re.escape(m)}(?![\w-])", text)]


def explain_help() -> str:
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["explain"].format_help()


def _between(text: str, start: str, end: str) -> str:
    """The part of ``text`` from ``start`` to the next ``end`` (what one list or table says)."""
    part = text[text.index(start) :]
    return part[: part.index(end)]


def _page(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


PLACES = {
    "xurs explain --help": lambda: _between(explain_help().rsplit("--method METHOD", 1)[1], "", "--compare"),
    "docs/attribution-methods.md": lambda: _between(
        _page("docs/attribution-methods.md"), "## The methods", "\n\n`"
    ),
    "docs/configuration.md": lambda: _between(_page("docs/configuration.md"), "`attribution.method` (", ")"),
    "README.md glossary": lambda: _between(_page("README.md"), "- **Attribution**", "\n- **"),
}


@pytest.mark.parametrize("place", PLACES)
def test_every_accepted_method_is_named(place: str) -> None:
    assert unnamed(PLACES[place]()) == []


def test_a_method_left_out_is_caught() -> None:
    listed = ", ".join(METHODS)
    assert unnamed(listed) == []
    assert unnamed(listed.replace("sequential_ig", "")) == ["sequential_ig"]
    assert unnamed("`layer_ig_steps`, `certified_max_evals`") == list(METHODS)  # a key is not the method
