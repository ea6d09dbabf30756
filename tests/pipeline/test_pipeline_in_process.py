"""``run_pipeline(cfg, until=...)`` runs the stage tasks in one process with the same outputs as
``dvc repro`` (the session's smoke project), and stops where it is told."""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
from params_reads import Reads, recording, unlisted_reads

from xurs_pipeline.config import load_params
from xurs_pipeline.contracts import STAGES, artifact
from xurs_pipeline.fingerprint import sha256_file
from xurs_pipeline.tasks.pipeline import run_pipeline
from xurs_pipeline.tasks.runner import main, stage_task

ROOT = Path(__file__).resolve().parents[2]


def test_every_declared_stage_is_its_task_module_and_nothing_else_is_a_stage():
    """Stages are declared once (contracts.STAGES): each is ``xurs_pipeline/tasks/<name>.py`` with a
    ``run``, run by the one entry point ``python -m stages <name>``; no other module of tasks/ is a stage
    and no task imports another (shared code lives in the library: ``runs/``)."""
    modules = {p.stem for p in (ROOT / "xurs_pipeline" / "tasks").glob("*.py")}
    tasks = modules - {"__init__", "runner", "pipeline"}
    assert tasks == set(STAGES)
    entry = ["__init__.py", "__main__.py", "warm.py"]  # the one entry point and its warm server, no stage
    assert sorted(p.name for p in (ROOT / "stages").glob("*.py")) == entry
    for name in STAGES:
        assert callable(stage_task(name)), name
        source = (ROOT / "xurs_pipeline" / "tasks" / f"{name}.py").read_text()
        imported = {
            t
            for t in tasks
            if f"xurs_pipeline.tasks.{t} import" in source or f"from xurs_pipeline.tasks import {t}" in source
        }
        assert imported == set(), (name, imported)


def test_an_unknown_stage_name_is_refused_with_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stages", "trian"]) == 2
    assert "no stage 'trian'; did you mean 'train'?" in capsys.readouterr().err
    assert main(["stages"]) == 2


@pytest.mark.slow
def test_in_process_outputs_equal_dvc_repro_up_to_predict(
    smoke_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(smoke_project / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    cfg = load_params("params.yaml")
    reads: Reads = {}
    headlines = run_pipeline(recording(cfg, reads), until="predict")
    assert unlisted_reads(reads, asdict(cfg)) == {}  # each stage lists what it reads (tests/params_reads.py)
    assert list(headlines) == ["check", "backbone", "prepare", "train_head", "train", "predict"]
    assert not artifact("gates").at(cfg.paths).exists()  # stopped after predict
    for name in ("prompts", "predictions"):
        ours = pd.read_parquet(artifact(name).at(cfg.paths))
        theirs = pd.read_parquet(smoke_project / artifact(name).at(cfg.paths))
        pd.testing.assert_frame_equal(ours, theirs, check_exact=True)
    head = artifact("classifier").at(cfg.paths) / "head.safetensors"
    assert sha256_file(head) == sha256_file(smoke_project / head)
    for name in ("train_headline", "predict_headline"):  # the runner writes what the task returns
        path = artifact(name).at(cfg.paths)
        assert path.read_bytes() == (smoke_project / path).read_bytes()


def test_an_unknown_stage_is_refused_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyError, match="until='nope': no such stage"):
        run_pipeline(None, until="nope")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["swap", "predict", "mask_eval", "report"])
def test_a_targets_stages_are_those_dvc_repro_of_it_runs(target: str) -> None:
    """``run_pipeline(cfg, target=...)`` runs what ``dvc repro <target>`` would: the stages ``dvc dag`` draws
    for it (read from DVC, an independent computation over dvc.yaml)."""
    import re
    import subprocess
    import sys

    from xurs_pipeline.tasks.pipeline import upstream

    dvc = Path(sys.executable).parent / "dvc"
    dot = subprocess.run(
        [str(dvc), "dag", "--dot", target],
        cwd=Path(__file__).parents[2],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    drawn = set(re.findall(r'"(\w+)"', dot))
    assert set(upstream(target)) == drawn
    assert upstream(target)[0] == "check"
    assert upstream(target)[-1] == target
    with pytest.raises(KeyError, match="'nope': no such stage"):
        upstream("nope")
