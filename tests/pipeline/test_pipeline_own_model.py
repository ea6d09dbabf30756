"""README's "Your own model and data", as a user runs it: the worked command block in a copy of the project
with MedQA-format questions in data/medqa/, to the report. The block's `python -c` and `xurs params` lines
run as written (the second with three size keys appended: 2 questions, fewer resamples); its `dvc repro`
runs the same stages in this process (``run_pipeline``: the same outputs,
tests/pipeline/test_pipeline_in_process.py), with each stage's declared inputs checked against the
generated dvc.yaml as ``python -m stages <name>`` checks them."""

from __future__ import annotations

import re
import shlex
from dataclasses import asdict
from pathlib import Path

import pytest
from params_reads import Reads, recording, unlisted_reads
from smoke_project import BIN, ROOT, copy_sources, run_ok

from xurs_pipeline.config import load_params
from xurs_pipeline.contracts import STAGES
from xurs_pipeline.models.tiny_paper import medqa_lines
from xurs_pipeline.tasks.pipeline import run_pipeline
from xurs_pipeline.tasks.runner import check_declared_inputs


def worked_command() -> list[str]:
    """The README section's bash block that saves a model, as one command per line (continuations joined)."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Your own model and data", 1)[1]
    block = next(b for b in re.findall(r"```bash\n(.*?)```", section, re.S) if "save_tiny_paper_model" in b)
    return [line.split("  #")[0].strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def write_questions(folder: Path) -> None:
    """MedQA-format lines: dev (carved into train and dev) and test."""
    folder.mkdir(parents=True)
    for split, n in (("dev", 24), ("test", 4)):
        (folder / f"{split}.jsonl").write_text(medqa_lines(split, n))


@pytest.mark.slow
def test_the_readme_worked_command_runs_your_model_and_data_to_a_report(tmp_path: Path, monkeypatch):
    commands = worked_command()
    assert [c.split()[0] for c in commands] == ["python", "xurs", "dvc"]
    work = copy_sources(tmp_path / "project")
    write_questions(work / "data" / "medqa")
    model, params, repro = commands
    run_ok([str(BIN / "python"), *shlex.split(model)[1:]], work)
    run_ok(
        [
            str(BIN / "xurs"),
            *shlex.split(params)[1:],
            "attribution.max_questions=2",
            "evaluation.bootstrap_resamples=100",
            "evaluation.n_random=2",
        ],
        work,
    )
    assert repro.startswith("dvc repro")
    monkeypatch.chdir(work)
    for stage in STAGES:
        check_declared_inputs(stage, work)
    cfg = load_params("params.yaml")
    assert (cfg.model.backbone, cfg.model.source, cfg.data.medqa_path) == ("hf", "my_model", "data/medqa")
    reads: Reads = {}
    headlines = run_pipeline(recording(cfg, reads))
    assert unlisted_reads(reads, asdict(cfg)) == {}  # every stage lists the MedQA params it reads
    assert headlines["predict"]["chance"] == 0.25
    index = (work / "results" / "html" / "index.html").read_text(encoding="utf-8")
    assert "medqa_local" in index
    assert "my_model" in index
