"""Artifacts carry the schema, its version and the config hash that made them; stages refuse inputs made
under another config or schema, saying which file, which hashes, and how to rebuild.

Every stage here runs as its own process on a copy of the reference project, with one Hydra override
that changes the config its inputs were made under.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_proc import run_ok, run_stage
from reliability_project import assert_same_attribute, copy_project

from xurs_pipeline.data.schema import prompts_provenance
from xurs_pipeline.io import Provenance, read_json, read_parquet, read_provenance, write_parquet

HF_FILES = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}
# What DVC displays, not what stages read: a provenance header would add three columns to every
# `dvc metrics show` (headline.json), change with the config and so rerun every stage (check.json), or is
# DVCLive's own layout (dvclive/). Each is derived from an artifact that carries provenance.
DISPLAY_FILES = {"headline.json", "check.json"}


def _refused(project: Path, stage: str, override: str, *expected: str) -> str:
    code, log = run_stage(project, stage, override)
    assert code == 2, log[-3000:]  # a deliberate XursError: one line, exit 2 (tasks/runner.py)
    for text in expected:
        assert text in log, f"{text!r} not in:\n{log[-3000:]}"
    return log


def test_every_artifact_names_its_schema_version_and_config_hash(reference: Path) -> None:
    artifacts = [p for p in (reference / "data").rglob("*") if p.suffix in (".parquet", ".json")]
    artifacts = [p for p in artifacts if p.name not in HF_FILES | DISPLAY_FILES and "dvclive" not in p.parts]
    assert len(artifacts) >= 15
    for path in artifacts:
        found = read_provenance(path)
        assert found is not None, f"{path}: no provenance"
        assert found.schema, path
        assert found.schema_version >= 1, path
        assert len(found.config_hash) == 16, f"{path}: config hash {found.config_hash!r}"


@pytest.mark.parametrize(
    ("stage", "output"), [("train", "train"), ("predict", "predict"), ("attribute", "attribute")]
)
def test_prompts_of_another_data_config_are_refused(
    reference: Path, tmp_path: Path, stage: str, output: str
) -> None:
    upstream = ("backbone", "prepare") if stage == "train" else ("backbone", "prepare", "train")
    project = copy_project(reference, tmp_path / "p", *upstream)
    made = read_provenance(project / "data" / "prepared" / "prompts.parquet")
    _refused(
        project,
        stage,
        "data.seed=5",
        "prompts.parquet (prompts v1): made under config hash "
        f"{made.config_hash}, but the current config hashes to",
        "dvc repro",
    )
    assert not (project / "data" / output).exists()


def test_prompts_of_another_schema_version_are_refused(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare")
    path = project / "data" / "prepared" / "prompts.parquet"
    made = read_provenance(path)
    write_parquet(read_parquet(path), path, Provenance(made.schema, 2, made.config_hash))
    _refused(
        project,
        "train",
        "train.seed=7",
        "schema 'prompts' v2, expected 'prompts' v1",
        "Rebuild it with `dvc repro`",
    )
    assert prompts_provenance().schema_version == 1


@pytest.mark.parametrize("stage", ["predict", "attribute"])
def test_a_classifier_of_another_training_config_is_refused(
    reference: Path, tmp_path: Path, stage: str
) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare", "train")
    made = read_provenance(project / "data" / "train" / "classifier" / "classifier.json")
    # the advice forces train: DVC may count it up to date (a classifier made outside DVC, then committed)
    _refused(
        project,
        stage,
        "train.seed=8",
        f"classifier.json (classifier v1): made under config hash "
        f"{made.config_hash}, but the current config hashes to",
        "`dvc repro --force --single-item train`",
    )


@pytest.mark.parametrize("stage", ["mask_eval", "checks"])
def test_attributions_of_another_config_are_refused_downstream(
    reference: Path, tmp_path: Path, stage: str
) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare", "train", "predict", "attribute")
    made = read_provenance(project / "data" / "attribute" / "attributions.parquet")
    _refused(
        project,
        stage,
        "attribution.seed=12",
        "attributions.parquet (attributions v1): made "
        f"under config hash {made.config_hash}, but the current config hashes to",
    )
    assert not (project / "data" / stage).exists()


def test_attribution_parts_of_another_config_are_recomputed(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare", "train", "attribute")
    out = project / "data" / "attribute"
    questions = sorted(read_parquet(out / "attributions.parquet")["record_id"])
    run_ok(project, "attribute", "attribution.seed=12")
    assert sorted(read_json(out / "parts" / "shard-0-of-1.json")["computed"]) == questions  # none reused
    other = read_parquet(out / "attributions.parquet")
    assert read_provenance(out / "attributions.parquet") != read_provenance(
        reference / "data" / "attribute" / "attributions.parquet"
    )
    assert (other["seed"] == 12).all()
    run_ok(project, "attribute")  # back to the original config: its parts were replaced, so recomputed
    assert sorted(read_json(out / "parts" / "shard-0-of-1.json")["computed"]) == questions
    assert_same_attribute(out, reference / "data" / "attribute")


def test_training_state_of_another_config_is_not_resumed(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare")
    run_ok(project, "train")
    log = run_ok(project, "train", "train.seed=8", "train.resume=true")
    assert "resumed from" not in log
    assert read_json(project / "data" / "train" / "train_metrics.json")["resumed_from_epoch"] is None
