"""docs/swap-plan.md states the analysis plan that evaluation/swap/plan.py applies: every constant in the
page's table equals the code's, the page names the code's digest, and a change to either fails here (the
planted change below)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xurs_pipeline.evaluation.swap import plan

PAGE = Path(__file__).resolve().parents[2] / "docs" / "swap-plan.md"


def page_plan(text: str) -> dict[str, list[str]]:
    """The plan table's rows: each key of a row (several keys share a row) -> its value(s), as written."""
    table: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        keys = re.findall(r"`([a-z_]+)`", cells[0])
        values = [v.strip().strip("`") for v in cells[1].split(",")]
        if len(keys) == len(values):
            table.update({k: [v] for k, v in zip(keys, values, strict=True)})
        else:
            table[keys[0]] = values
    return table


def as_written(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, tuple) else [str(value)]


def test_the_page_states_every_constant_of_the_plan() -> None:
    table = page_plan(PAGE.read_text(encoding="utf-8"))
    assert set(table) == set(plan.PLAN)
    for key, value in plan.PLAN.items():
        assert table[key] == as_written(value), key


def test_the_page_names_the_plans_digest() -> None:
    assert f"Plan digest: `{plan.plan_digest()}`." in PAGE.read_text(encoding="utf-8")


def test_a_changed_constant_changes_the_digest_and_the_table_check(monkeypatch: pytest.MonkeyPatch) -> None:
    before = plan.plan_digest()
    monkeypatch.setitem(plan.PLAN, "alpha", 0.1)
    assert plan.plan_digest() != before
    table = page_plan(PAGE.read_text(encoding="utf-8"))
    assert table["alpha"] != as_written(plan.PLAN["alpha"])
