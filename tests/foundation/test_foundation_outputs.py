"""docs/outputs.md, every file a run writes, is generated from xurs_pipeline/contracts.py (`xurs outputs`):
the committed page equals the generated one, lists every artifact, table and plot, and a new artifact
without a description is refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xurs_pipeline import outputs
from xurs_pipeline.cli import main
from xurs_pipeline.contracts import ARTIFACTS, PLOTS, Artifact

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "outputs.md"


def test_the_committed_page_is_the_generated_one():
    assert PAGE.read_text(encoding="utf-8") == outputs.outputs_markdown(), "run `xurs outputs`"


def test_every_artifact_table_and_plot_is_listed():
    text = outputs.outputs_markdown()
    roots = {"artifacts": "data", "results": "results"}
    for a in ARTIFACTS.values():
        assert f"| `{roots[a.root]}/{a.path}` | `{a.writer}` |" in text, a.name
    # every output described; a metric by the shared headline text unless it holds more (the swap methods)
    assert {a.name for a in ARTIFACTS.values() if a.kind != "metric"} <= set(outputs.HOLDS) <= set(ARTIFACTS)
    assert "| `data/swap/methods.json` | `swap` | DVC metric | per method: agreement" in text
    for name in ("table1_effects", "table3_endpoints", "table9_localisation", "verdicts"):
        assert re.search(rf"^- `{name}`: \S", text, re.M), name
    for plot in PLOTS:
        assert f"- `{plot}.png`: " in text


def test_an_artifact_without_a_description_is_refused(monkeypatch):
    planted = Artifact("planted", "planted/x.json", "checks")
    monkeypatch.setitem(ARTIFACTS, "planted", planted)
    with pytest.raises(KeyError, match=r"'planted' \(planted/x\.json\) has no entry .*HOLDS"):
        outputs.outputs_markdown()


def test_xurs_outputs_writes_and_checks(tmp_path, capsys):
    out = tmp_path / "outputs.md"
    assert main(["outputs", "--out", str(out), "--check"]) == 1  # missing
    assert main(["outputs", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == outputs.outputs_markdown()
    assert main(["outputs", "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("data/check.json", "data/stale.json"))
    assert main(["outputs", "--out", str(out), "--check"]) == 1
    assert "run `xurs outputs`" in capsys.readouterr().out
