"""No stale or damaged attribution part is ever merged (issue 15, items 1 and 10).

Finished questions in ``attribute/parts/`` are keyed by content: the config fingerprint, the SHA-256 of
the classifier directory and of the prepared prompts file, and the code version. The runner is driven as
the attribute stage drives it (``input_hashes`` of the files on disk), twice: with nothing changed it
resumes (0 questions computed); after the classifier, the prompts or the code changed it recomputes
every question and says which input changed; a damaged coordinate file is recomputed, never merged.
A rerun into a fresh directory writes byte-identical files. The training state is keyed the same way.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "attribution"))
from helpers import PAD_ID, TinyBeliefClassifier, prompts_frame

from xurs_pipeline.attribution import runner
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.records import record_stem
from xurs_pipeline.attribution.runner import ATTRIBUTIONS_FILE, RunOutput, input_hashes, run_attribution
from xurs_pipeline.fingerprint import ContentKey
from xurs_pipeline.io import Provenance, read_json, read_parquet, write_parquet
from xurs_pipeline.train.state import keyed_state_dir

CFG = AttributionConfig(progress=False, refs_per_collection=2, n_samples=4, samples_per_call=4, target="all")


def _save_inputs(root: Path, model: torch.nn.Module, frame: pd.DataFrame) -> tuple[Path, Path]:
    """The stage's two input artifacts on disk: a classifier directory and a prompts file."""
    classifier, prompts = root / "classifier", root / "prompts.parquet"
    classifier.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, classifier / "head.safetensors")
    write_parquet(frame, prompts, Provenance("prompts", 1))
    return classifier, prompts


def _attribute(root: Path, model: torch.nn.Module, frame: pd.DataFrame, out: Path) -> list[str]:
    """Run as the stage does; returns the record ids this run computed (not resumed)."""
    classifier, prompts = _save_inputs(root, model, frame)
    output = RunOutput(out, "cfg", inputs=input_hashes(classifier, prompts))
    run_attribution(model, frame, CFG, pad_id=PAD_ID, max_positions=64, out=output)
    return read_json(out / "parts" / "shard-0-of-1.json")["computed"]


def _widths(out: Path) -> list[float]:
    return read_parquet(out / ATTRIBUTIONS_FILE)["width_input"].tolist()


def _retrained(seed: int) -> torch.nn.Module:
    return TinyBeliefClassifier(vocab=40, seed=seed)


def test_a_changed_classifier_recomputes_every_question(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    frame, out = prompts_frame(n_test=3), tmp_path / "attribute"
    assert len(_attribute(tmp_path, _retrained(0), frame, out)) == 3
    assert _attribute(tmp_path, _retrained(0), frame, out) == []  # same inputs: resumed
    stale = _widths(out)
    with caplog.at_level(logging.WARNING, logger="xurs"):
        assert len(_attribute(tmp_path, _retrained(1), frame, out)) == 3
    assert "(classifier changed): recomputing" in caplog.text
    fresh = tmp_path / "fresh"
    _attribute(tmp_path / "f", _retrained(1), frame, fresh)
    assert _widths(out) == _widths(fresh) != stale


def test_changed_prompts_or_code_recompute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame, out, model = prompts_frame(n_test=2), tmp_path / "attribute", _retrained(0)
    _attribute(tmp_path, model, frame, out)
    edited = frame.copy()
    edited.at[4, "input_ids"] = [1, *reversed(frame.at[4, "input_ids"][1:])]  # a reference's tokens
    with caplog.at_level(logging.WARNING, logger="xurs"):
        assert len(_attribute(tmp_path, model, edited, out)) == 2
    assert "(prompts changed)" in caplog.text
    monkeypatch.setattr(runner, "code_version", lambda: "another")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="xurs"):
        assert len(_attribute(tmp_path, model, edited, out)) == 2
    assert "(code changed)" in caplog.text


def test_a_damaged_coordinate_file_is_recomputed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    frame, out, model = prompts_frame(n_test=2), tmp_path / "attribute", _retrained(0)
    _attribute(tmp_path, model, frame, out)
    before = _widths(out)
    damaged = sorted((out / "parts" / "coords").iterdir())[0]
    data = bytearray(damaged.read_bytes())
    data[-3] ^= 0x01  # one bit of one float
    damaged.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="xurs"):
        computed = _attribute(tmp_path, model, frame, out)
    assert len(computed) == 1
    assert damaged.name.startswith(record_stem(computed[0]) + ".")
    assert f"recomputing {computed[0]}" in caplog.text
    assert "SHA-256 checksum" in caplog.text
    assert _widths(out) == before
    assert (out / "coords" / damaged.name).read_bytes() != bytes(data)


def test_a_rerun_writes_byte_identical_files(tmp_path: Path) -> None:
    frame, model = prompts_frame(n_test=3), _retrained(0)
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        _attribute(tmp_path, model, frame, out)
    files = [_outputs(out) for out in outs]
    assert files[0] == files[1]
    assert len([f for f in files[0] if f.parts[0] == "coords"]) >= 6  # several files: orders would show
    different = [str(f) for f in files[0] if (outs[0] / f).read_bytes() != (outs[1] / f).read_bytes()]
    assert different == []


def _outputs(out: Path) -> list[Path]:
    return sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and "parts" not in p.parts)


def test_train_resume_state_is_keyed_by_content(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    old = ContentKey({"config": "c", "backbone": "b", "prompts": "p1", "code": "x"})
    saved = keyed_state_dir(tmp_path, old, resume=False)
    saved.mkdir()
    (saved / "progress.json").write_text("{}")
    assert keyed_state_dir(tmp_path, old, resume=True) == saved  # same inputs: resumes from it
    new = ContentKey({**old.parts, "prompts": "p2"})
    with caplog.at_level(logging.WARNING, logger="xurs"):
        fresh = keyed_state_dir(tmp_path, new, resume=True)
    assert fresh != saved
    assert not fresh.exists()
    assert f"not resuming from {saved}: it was saved under other inputs (prompts changed)" in caplog.text
