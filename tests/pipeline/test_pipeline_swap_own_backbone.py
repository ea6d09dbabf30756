"""The swap study on a user's own backbone, as docs/swap-control.md tells a user to run it: one command from
a fresh clone with ``model.backbone=hf model.source=<a local directory or a hub id>``, here a tiny random
SmolLM3 (a second architecture: grouped-query attention, no position encoding on every fourth block) saved
as a Hugging Face directory. Only sizes are shrunk; the study is judged by the same analysis plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from smoke_project import BIN, run_ok
from user_clone import git_clone

from xurs_pipeline.evaluation.config import SWAP_METHODS
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.models.tiny import save_tiny_paper_model

SIZES = ["data.families=[8,2,3]", "train.max_epochs=1", "train.partial_layers=1",
         "attribution.kronrod_max_evals=60", "attribution.max_questions=3"]
pytestmark = [pytest.mark.slow, pytest.mark.second_job]  # a fresh clone's dvc repro (CI's second job)


def own_backbone(model_dir: Path) -> list[str]:
    """The overrides docs/swap-control.md gives for one's own model."""
    return ["model.backbone=hf", f"model.source={model_dir}", "model.keep_layers=0"]


def test_the_swap_study_runs_on_a_users_own_backbone(tmp_path: Path) -> None:
    model_dir = save_tiny_paper_model(tmp_path / "own-model", "smollm3", num_layers=4)
    work = git_clone(tmp_path / "xurs")
    command = ["params", "experiment=controlled_swap", *own_backbone(model_dir), *SIZES]
    run_ok([str(BIN / "xurs"), *command], work)
    run_ok([str(BIN / "dvc"), "repro", "swap"], work)
    params = yaml.safe_load((work / "params.yaml").read_text())
    assert (params["model"]["backbone"], params["model"]["source"]) == ("hf", str(model_dir))
    summary = json.loads((work / "data/swap/study/summary.json").read_text())
    faithful = summary["faithfulness"]
    assert faithful["plan_digest"] == plan.plan_digest()
    assert faithful["power"]["studies"] == 1
    metrics = json.loads((work / "data/swap/methods.json").read_text())
    for method in SWAP_METHODS:
        expected = "baseline" if method in plan.BASELINES else "no verdict"  # one seed: no verdict
        assert metrics[method]["verdict"] == expected, method
    assert {metrics[b]["verdict"] for b in plan.LABEL_RANKERS} == {"baseline"}
    clear = {metrics[m][plan.JUDGE]["all"]["clear_n"] for m in SWAP_METHODS}
    assert len(clear) == 1  # every method on the same clear probes
