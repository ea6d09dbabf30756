"""``records.has_visible``: the short-circuit test QuestionRecord's emptiness checks use agrees with
``visible`` (the full filter) on blank, invisible-only and mixed text."""

from __future__ import annotations

import pytest

from xurs_pipeline.data.records import has_visible, visible

BLANK = ("", "   \t\n", "\u2800\u2800 \u2800", "\u200b\u200d\ufeff", "\u0301\u0308", "\u3164\u115f")
SHOWN = ("a", "\u200b\u2800 x", "Fever \u0301", "\u00e9")


@pytest.mark.parametrize("text", BLANK + SHOWN)
def test_has_visible_is_whether_visible_leaves_anything(text: str) -> None:
    assert has_visible(text) == bool(visible(text)) == (text in SHOWN)
