"""Tables render the artifact frame's numbers, in three formats, with provenance."""

from __future__ import annotations

import pandas as pd
import pytest

from xurs_pipeline.reporting.render import (
    Column,
    TableSpec,
    fmt_float,
    fmt_interval,
    fmt_verdict,
    write_table,
)

SPEC = TableSpec(
    name="t1",
    macro="EffectRows",
    caption="Mean advantage (Eq. 8)",
    columns=[
        Column("model", "Model", align="l"),
        Column("mean", "Mean advantage", fmt_float(4)),
        Column("ci", "95% CI", fmt_interval(4)),
        Column("ok", "Verdict", fmt_verdict),
    ],
)


def test_three_formats_hold_the_frame_values(tmp_path):
    frame = pd.DataFrame({"model": ["tiny_model"], "mean": [0.038123], "ci": [(0.01, 0.0655)], "ok": [True]})
    md, tex, csv = write_table(frame, SPEC, tmp_path, experiment="smoke", config_hash="abcd")
    text = md.read_text()
    assert "| tiny_model | 0.0381 | [0.0100, 0.0655] | pass |" in text
    assert "experiment smoke, config abcd" in text
    latex = tex.read_text()
    assert r"\newcommand{\EffectRows}" in latex
    assert r"tiny\_model & 0.0381 & [0.0100, 0.0655] & pass\\" in latex
    for fragment in (r"\toprule", r"\bottomrule", r"95\% CI"):
        assert fragment in latex
    back = pd.read_csv(csv)
    assert back.loc[0, "mean"] == pytest.approx(0.038123)
    assert back.loc[0, "config_hash"] == "abcd"


def test_missing_column_is_named(tmp_path):
    with pytest.raises(KeyError, match=r"lacks columns \['ci', 'ok'\]"):
        write_table(pd.DataFrame({"model": ["m"], "mean": [1.0]}), SPEC, tmp_path, "smoke", "x")
    assert list(tmp_path.iterdir()) == []


def test_an_interval_of_fractions_reads_as_percentages() -> None:
    assert fmt_interval(0, percent=True)((0.3006, 0.9494)) == "[30, 95]"
    assert fmt_interval(2)((0.3006, 0.9494)) == "[0.30, 0.95]"
    assert fmt_interval(0, percent=True)((float("nan"), 1.0)) == "[—, 100]"
