"""``records.has_visible``: the short-circuit test QuestionRecord's emptiness checks use agrees with
``visible`` (the full filter) on blank, invisible-only and mixed text."""

from __future__ import annotations

import pytest

from xurs_pipeline.data.records import has_visible, visible

CASES = [
    "",
    "   \t\n",
    "\u2800\u2800 \u2800",  # Braille blanks
    "\u200b\u200d\ufeff",  # zero-width space, joiner, BOM
    "\u0301\u0308",  # lone combining marks
    "\u3164\u115f",  # Hangul fillers
    "a",
    "\u200b\u2800 x",
    "Fever \u0301",
    "\u00e9",
]


@pytest.mark.parametrize("text", CASES)
def test_has_visible_is_whether_visible_leaves_anything(text: str) -> None:
    assert has_visible(text) == bool(visible(text))


def test_has_visible_is_false_exactly_on_the_blank_cases() -> None:
    assert [t for t in CASES if not has_visible(t)] == CASES[:6]
