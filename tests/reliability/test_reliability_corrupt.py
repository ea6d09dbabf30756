"""Corrupted or truncated Parquet, JSON and checkpoint (safetensors, torch) files are detected on read.

Each damaged copy of a real artifact of the reference project must raise ``ArtifactError`` naming the
file, from the reader the next stage uses, never be read as other data; a stage given one exits with
status 2 and that message instead of a traceback, and writes nothing. A damaged feature cache (a cache,
not an artifact) is recomputed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability_proc import run_ok, run_stage
from reliability_project import copy_project, parquet_equal

from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.evaluation.artifacts import load_coords, read_attributions, read_predictions
from xurs_pipeline.io import ArtifactError, read_json
from xurs_pipeline.models.backbone import load_backbone_dir, read_backbone_info
from xurs_pipeline.models.checkpoint import load_classifier


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _cut_tail(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-8])


def _flip(path: Path) -> None:
    """Invert one byte a third into the file (inside the data, before any footer)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00not what was written\xff" * 8)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate,
    "tail_cut": _cut_tail,
    "byte_flipped": _flip,
    "empty": _empty,
    "garbage": _garbage,
}
PARQUET = {
    "prepared/prompts.parquet": lambda p: read_prompts(p),
    "predict/predictions.parquet": lambda p: read_predictions(p),
    "attribute/attributions.parquet": lambda p: read_attributions(p.parent),
}
JSON = {
    "prepared/summary.json": read_json,
    "train/train_metrics.json": read_json,
    "train/classifier/classifier.json": lambda p: load_classifier(p.parent),
    "backbone/xurs_backbone.json": lambda p: read_backbone_info(p.parent),
    "attribute/nonfinite.json": read_json,
}
TENSORS = {
    "train/classifier/head.safetensors": lambda p: load_classifier(p.parent),
    "backbone/model.safetensors": lambda p: load_backbone_dir(p.parent),
    "attribute/coords": lambda p: load_coords(p.parent.parent, p.name),
}


@pytest.fixture
def damaged(reference: Path, tmp_path: Path) -> Callable[[str, str], Path]:
    """damaged(artifact, how): a copy of the reference's data with that one file damaged."""

    def make(artifact: str, how: str) -> Path:
        data = tmp_path / "data"
        if not data.exists():
            shutil.copytree(reference / "data", data)
        path = data / artifact
        if path.is_dir():  # one coordinate file of the folder
            path = sorted(path.iterdir())[0]
        DAMAGE[how](path)
        return path

    return make


@pytest.mark.parametrize("how", sorted(DAMAGE))
@pytest.mark.parametrize("artifact", sorted(PARQUET))
def test_damaged_parquet_is_detected(damaged: Callable[[str, str], Path], artifact: str, how: str) -> None:
    path = damaged(artifact, how)
    with pytest.raises(ArtifactError, match=r"corrupt or truncated Parquet") as err:
        PARQUET[artifact](path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("how", ["truncated", "tail_cut", "empty", "garbage"])
@pytest.mark.parametrize("artifact", sorted(JSON))
def test_damaged_json_is_detected(damaged: Callable[[str, str], Path], artifact: str, how: str) -> None:
    path = damaged(artifact, how)
    with pytest.raises(ArtifactError, match=r"corrupt or truncated JSON") as err:
        JSON[artifact](path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("how", ["truncated", "tail_cut", "empty", "garbage"])
@pytest.mark.parametrize("artifact", sorted(TENSORS))
def test_damaged_tensor_files_are_detected(
    damaged: Callable[[str, str], Path], artifact: str, how: str
) -> None:
    path = damaged(artifact, how)
    with pytest.raises(ArtifactError, match=r"corrupt or truncated safetensors file") as err:
        TENSORS[artifact](path)
    assert str(path) in str(err.value)


def test_a_stage_given_a_truncated_checkpoint_stops_naming_it(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare", "train")
    head = project / "data" / "train" / "classifier" / "head.safetensors"
    _truncate(head)
    code, log = run_stage(project, "predict")
    assert code == 2, log[-3000:]  # a deliberate XursError: one line, exit 2 (tasks/runner.py)
    assert "data/train/classifier/head.safetensors: corrupt or truncated safetensors file" in log
    assert "Traceback" not in log
    assert not (project / "data" / "predict").exists()


@pytest.mark.parametrize("name", ["optimizer.pt", "trainable.safetensors", "progress.json"])
def test_a_damaged_training_state_stops_resume_naming_the_file(
    reference: Path, tmp_path: Path, name: str
) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare")
    shutil.copytree(
        reference / ".cache" / "xurs" / "train_state", project / ".cache" / "xurs" / "train_state"
    )
    (state,) = [
        p for p in (project / ".cache" / "xurs" / "train_state").iterdir() if not p.name.startswith(".")
    ]
    _truncate(state / name)
    code, log = run_stage(project, "train", "train.resume=true")
    assert code == 2, log[-3000:]  # a deliberate XursError: one line, exit 2 (tasks/runner.py)
    assert f"{state.name}/{name}: corrupt or truncated" in log
    assert "Traceback" not in log
    assert not (project / "data" / "train").exists()


def test_a_damaged_feature_cache_is_recomputed(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare", "train")
    shutil.copytree(reference / ".cache" / "xurs" / "features", project / ".cache" / "xurs" / "features")
    for cached in (project / ".cache" / "xurs" / "features").glob("*.safetensors"):
        _truncate(cached)
    log = run_ok(project, "predict")
    assert "is unreadable" in log
    assert "recomputing" in log
    parquet_equal(
        project / "data" / "predict" / "predictions.parquet",
        reference / "data" / "predict" / "predictions.parquet",
    )
