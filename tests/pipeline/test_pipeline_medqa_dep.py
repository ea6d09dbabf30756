"""Editing a local MedQA file reruns ``prepare``: the MedQA directory is a DVC dependency of ``prepare`` when
the data come from it. Its own small project, so it runs beside the smoke project's tests rather than in their
pytest-xdist group (tests/conftest.py): ``prepare``'s upstream stages (``check``, ``backbone``) run in this
process (``run_pipeline``: the outputs of their DVC runs, tests/pipeline/test_pipeline_in_process.py), and
``prepare`` itself through ``dvc repro --single-item``, which records its dependencies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from smoke_project import BIN, changed_deps, copy_sources, dvc_status, run_ok

from xurs_pipeline.config import load_params
from xurs_pipeline.contracts import STAGES
from xurs_pipeline.tasks.pipeline import run_pipeline

UPSTREAM = list(STAGES)[: list(STAGES).index("prepare")]  # check, backbone


def _medqa_rows(n: int, split: str) -> str:
    rows = [
        {
            "question": f"A {split} patient {i} has symptom {i * 7} for {i + 2} days. What is the cause?",
            "options": {k: f"{k} cause {i}" for k in "ABCD"},
            "answer_idx": "ABCD"[i % 4],
        }
        for i in range(n)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.mark.slow
def test_editing_a_medqa_question_reruns_prepare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "medqa"
    copy_sources(work)
    files = work / "medqa" / "US" / "4_options"
    files.mkdir(parents=True)
    (files / "phrases_no_exclude_dev.jsonl").write_text(_medqa_rows(10, "dev"))
    (files / "phrases_no_exclude_test.jsonl").write_text(_medqa_rows(4, "test"))
    run_ok([str(BIN / "dvc"), "init", "--no-scm", "-q"], work)
    run_ok(
        [
            str(BIN / "xurs"),
            "params",
            "experiment=smoke",
            "data.source=medqa",
            "data.medqa_path=medqa",
            "data.medqa_carve=dev",
        ],
        work,
    )
    prepare = yaml.safe_load((work / "dvc.yaml").read_text())["stages"]["prepare"]
    assert "${data.medqa_path}" in prepare["deps"]
    monkeypatch.chdir(work)
    run_pipeline(load_params("params.yaml"), until=UPSTREAM[-1])
    run_ok([str(BIN / "dvc"), "repro", "--single-item", "prepare"], work)
    assert "prepare" not in dvc_status(work)
    dev = files / "phrases_no_exclude_dev.jsonl"
    dev.write_text(dev.read_text().replace("symptom 7 ", "symptom 8 ", 1))
    assert changed_deps(dvc_status(work)["prepare"]) == {"medqa"}
