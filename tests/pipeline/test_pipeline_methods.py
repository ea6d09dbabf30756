"""Attribution methods through the whole pipeline: the smoke experiment with ``attribution.method`` set to a
token method runs in one process to the report (``run_pipeline``, the same tasks ``dvc repro`` runs), its rows
carry the method's cost, and the question pages show a residual only where the method has one; with
``evaluation.compare_method`` the ``attribute_compare`` stage explains the same questions with a second
method and every question page shows both side by side."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from xurs_pipeline.config import compose, load_params
from xurs_pipeline.contracts import artifact, compare_dir
from xurs_pipeline.reporting.html_explanation import TOP_TOKENS
from xurs_pipeline.reporting.html_index import page_name
from xurs_pipeline.reporting.html_view import GREYED_SECTIONS, HIDDEN_SECTIONS
from xurs_pipeline.tasks.pipeline import run_pipeline

REPO = Path(__file__).resolve().parents[2]


def _top(magnitude: np.ndarray, sections: list[str]) -> set[int]:
    """The page's top-k positions, computed here: drawn positions by magnitude, earlier first on ties."""
    drawn = [i for i, s in enumerate(sections) if s not in GREYED_SECTIONS + HIDDEN_SECTIONS]
    return set(sorted(drawn, key=lambda i: (-magnitude[i], i))[:TOP_TOKENS])


@pytest.mark.slow
@pytest.mark.parametrize(("method", "compare"), [("occlusion_token", "eg"), ("layer_ig", "")])
def test_the_smoke_experiment_runs_to_the_report_with_a_token_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, compare: str
) -> None:
    overrides = ["experiment=smoke", f"attribution.method={method}", f"evaluation.compare_method='{compare}'"]
    params = compose(overrides, REPO / "conf")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    cfg = load_params("params.yaml")
    run_pipeline(cfg, target="report")
    rows = pd.read_parquet(artifact("attributions").at(cfg.paths))
    assert set(rows["method"]) == {method}
    assert (rows["forward_evals"] > 0).all()
    assert (rows["grad_evals"] == (cfg.attribution.layer_ig_steps if method == "layer_ig" else 0)).all()
    assert rows["residual"].notna().all() == (method == "layer_ig")
    html = artifact("html").at(cfg.paths)
    page = (html / page_name(str(rows["record_id"].iloc[0]))).read_text()
    assert ("Completeness residual R (Eq. 9)" in page) == (method == "layer_ig")
    assert "follows the model on" in page  # the swap control's finding for the method, scoped
    assert ("Two methods on this question" in page) == bool(compare)
    if compare:
        _check_comparison(cfg, rows, compare, html)


def _check_comparison(cfg, rows: pd.DataFrame, compare: str, html: Path) -> None:  # type: ignore[no-untyped-def]
    """The second method explained exactly the main run's (question, option) rows, with its own cost, and
    each page's count of tokens both methods rank in their top k is the one computed from the two tables."""
    other = pd.read_parquet(compare_dir(cfg.paths, compare) / "attributions.parquet")
    assert set(other["method"]) == {compare}
    assert (other["grad_evals"] > 0).all()  # EG's gradient samples, where occlusion has none
    keys = ["record_id", "target"]
    assert sorted(map(tuple, other[keys].values.tolist())) == sorted(map(tuple, rows[keys].values.tolist()))
    sections = pd.read_parquet(artifact("prompts").at(cfg.paths)).set_index("record_id")["sections"]
    other = other.set_index(keys)
    for row in rows.itertuples(index=False):
        mine = np.asarray(row.token_magnitude)
        theirs = np.asarray(other.loc[(row.record_id, row.target), "token_magnitude"])
        assert not np.allclose(mine, theirs)  # two methods, not one twice
        names = list(sections[row.record_id])
        agree = len(_top(mine, names) & _top(theirs, names))
        page = (html / page_name(row.record_id)).read_text()
        assert re.search(rf'data-agree="{agree}"', page), (row.record_id, agree)
        assert f"<strong>{compare}</strong>" in page
