"""Caches and resume state are verified by content before use (issue 15, items 3 and 4).

- feature cache: one-bit mantissa flips in 64 floats of a cached file (header and size intact, so it
  still opens) are caught by its SHA-256 checksum; train recomputes the features and makes the
  reference's head, bit for bit;
- training state: a pickle planted in the state directory (as the old ``rng_0.pt``, or as
  ``optimizer.pt`` with its recorded checksum forged to match) never executes under
  ``train.resume=true``; the forged one stops the resume naming the file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml
from reliability_proc import run_ok, run_stage
from reliability_project import assert_same_training, copy_project

from xurs_pipeline.fingerprint import sha256_file

RESUME = "train.resume=true"


def _flip_mantissa_bits(path: Path, count: int = 64) -> None:
    """Flip the lowest mantissa bit of ``count`` float32 values in the tensor data of a safetensors file."""
    data = bytearray(path.read_bytes())
    start = 8 + int.from_bytes(data[:8], "little")
    values = np.frombuffer(bytes(data[start:]), dtype=np.uint32).copy()
    picks = np.linspace(0, values.size - 1, count).astype(int)
    values[picks] ^= 1
    data[start:] = values.tobytes()
    path.write_bytes(bytes(data))


def test_a_feature_cache_with_flipped_bits_is_recomputed(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare")
    cache = project / ".cache" / "xurs" / "features"
    shutil.copytree(reference / ".cache" / "xurs" / "features", cache)
    files = sorted(cache.glob("*.safetensors"))
    assert files
    for path in files:
        _flip_mantissa_bits(path)
    log = run_ok(project, "train")
    assert "SHA-256 checksum" in log
    assert "recomputing" in log
    assert "feature cache hit" not in log
    assert_same_training(project / "data" / "train", reference / "data" / "train")


class _Planted:
    """Unpickling this creates the directory ``marker``: proof that code from the file ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (self.marker,)


def _project_with_state(reference: Path, target: Path) -> tuple[Path, Path]:
    project = copy_project(reference, target, "backbone", "prepare")
    root = project / ".cache" / "xurs" / "train_state"
    shutil.copytree(reference / ".cache" / "xurs" / "train_state", root)
    (state,) = [p for p in root.iterdir() if not p.name.startswith(".")]
    return project, state


def test_a_planted_rng_pickle_never_runs(reference: Path, tmp_path: Path) -> None:
    project, state = _project_with_state(reference, tmp_path / "p")
    marker = tmp_path / "executed"
    torch.save({"torch": _Planted(marker)}, state / "rng_0.pt")  # the file the old state format read
    log = run_ok(project, "train", RESUME)
    assert "resumed from" in log  # the resume read this state (a fresh start would pass the rest too)
    assert not marker.exists()
    assert_same_training(project / "data" / "train", reference / "data" / "train")


def test_a_planted_optimizer_pickle_with_a_forged_checksum_never_runs(
    reference: Path, tmp_path: Path
) -> None:
    project, state = _project_with_state(reference, tmp_path / "p")
    marker = tmp_path / "executed"
    torch.save({"state": _Planted(marker)}, state / "optimizer.pt")
    progress = json.loads((state / "progress.json").read_text())
    progress["checksums"]["optimizer.pt"] = sha256_file(state / "optimizer.pt")
    (state / "progress.json").write_text(json.dumps(progress))
    code, log = run_stage(project, "train", RESUME)
    assert code == 2, log[-3000:]  # a deliberate XursError: one line, exit 2 (tasks/runner.py)
    assert not marker.exists()
    assert f"{state.name}/optimizer.pt: corrupt or truncated training state" in log
    assert "Traceback" not in log


def test_an_altered_state_file_stops_the_resume(reference: Path, tmp_path: Path) -> None:
    project, state = _project_with_state(reference, tmp_path / "p")
    _flip_mantissa_bits(state / "best.safetensors", count=1)
    code, log = run_stage(project, "train", RESUME)
    assert code == 2, log[-3000:]  # a deliberate XursError: one line, exit 2 (tasks/runner.py)
    assert f"{state.name}/best.safetensors: corrupt or truncated training state (its SHA-256 differs" in log


def test_unknown_record_ids_stop_the_check_stage_before_any_output_is_deleted(
    reference: Path, tmp_path: Path
) -> None:
    """Issue 15, item 8 and issue 55, item 5: a typo in ``attribution.record_ids`` is named by the first
    stage, ``check``, against the prepared prompts, before ``dvc repro`` deletes any output (training no
    longer reads record_ids: choosing questions does not retrain)."""
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare")
    params = project / "params.yaml"
    composed = yaml.safe_load(params.read_text())
    composed["attribution"]["record_ids"] = ["nope", "also-nope"]
    params.write_text(yaml.safe_dump(composed, sort_keys=False))
    code, log = run_stage(project, "check")
    assert code == 2, log[-3000:]  # one line, exit 2
    assert "attribution.record_ids: ['nope', 'also-nope'] not in the prepared prompts" in log
    assert "Traceback" not in log
    assert not (project / "data" / "check.json").exists()
    prompts = pd.read_parquet(project / "data/prepared/prompts.parquet", columns=["record_id"])
    composed["attribution"]["record_ids"] = [str(prompts["record_id"][0])]  # a prepared record passes
    params.write_text(yaml.safe_dump(composed, sort_keys=False))
    code, log = run_stage(project, "check")
    assert code == 0, log[-3000:]


def test_the_pickle_refusal_names_what_was_refused_and_never_advises_weights_only_false(
    tmp_path: Path,
) -> None:
    """torch's message for a refused pickle says re-running with ``weights_only=False`` "will likely
    succeed" (and run the file's code); the refusal keeps one line: the file and the refused global."""
    from xurs_pipeline.io import ArtifactError
    from xurs_pipeline.train.state import _torch_load

    marker = tmp_path / "executed"
    torch.save({"state": _Planted(marker)}, tmp_path / "optimizer.pt")
    (tmp_path / "garbage.pt").write_bytes(b"not a torch file")
    for name, refused in (("optimizer.pt", "GLOBAL posix.mkdir"), ("garbage.pt", "")):
        try:
            _torch_load(tmp_path / name)
        except ArtifactError as err:
            message = str(err)
        else:
            raise AssertionError(f"{name} was loaded")
        assert f"{name}: corrupt or truncated training state" in message
        assert refused in message
        assert "weights_only" not in message
        assert "succeed" not in message
        assert "\n" not in message
    assert not marker.exists()
