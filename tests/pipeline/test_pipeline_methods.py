"""Attribution methods through the whole pipeline: the smoke experiment with ``attribution.method`` set to a
token method runs in one process to the report (``run_pipeline``, the same tasks ``dvc repro`` runs), its rows
carry the method's cost, and the question pages show a residual only where the method has one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from xurs_pipeline.config import compose, load_params
from xurs_pipeline.contracts import artifact
from xurs_pipeline.tasks.pipeline import run_pipeline

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["occlusion_token", "layer_ig"])
def test_the_smoke_experiment_runs_to_the_report_with_a_token_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    params = compose(["experiment=smoke", f"attribution.method={method}"], REPO / "conf")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    cfg = load_params("params.yaml")
    run_pipeline(cfg, target="report")
    rows = pd.read_parquet(artifact("attributions").at(cfg.paths))
    assert set(rows["method"]) == {method}
    assert (rows["forward_evals"] > 0).all()
    assert (rows["grad_evals"] == (cfg.attribution.layer_ig_steps if method == "layer_ig" else 0)).all()
    assert rows["residual"].notna().all() == (method == "layer_ig")
    pages = [p for p in artifact("html").at(cfg.paths).rglob("*.html") if p.name != "index.html"]
    assert pages
    page = pages[0].read_text()
    assert ("Completeness residual R (Eq. 9)" in page) == (method == "layer_ig")
    assert "follows the model on" in page  # the swap control's finding for the method, scoped
