"""Attribution that runs out of memory (long prompts, too many samples per call) adapts the batch, or
fails with a message about ``attribution.samples_per_call``, instead of an unexplained crash.

The out-of-memory errors are injected by a model wrapper that refuses gradient batches above a size,
as a device too small for them would (``torch.OutOfMemoryError``, or the RuntimeError "out of memory"
that other backends raise). Halving keeps the batch boundaries of a smaller ``samples_per_call``, so the
sums equal that run's bit for bit.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from reliability_proc import Hook, run_stage
from reliability_project import assert_same_attribute, copy_project
from torch import nn

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.gradients import AttributionMemoryError
from xurs_pipeline.attribution.runner import RunOutput, run_attribution
from xurs_pipeline.io import read_parquet
from xurs_pipeline.models.checkpoint import load_classifier

CFG = {"refs_per_collection": 4, "n_samples": 8, "max_questions": 2, "progress": False}


class SmallDevice(nn.Module):
    """Wraps a classifier; a gradient batch of more than ``rows`` samples raises ``error`` (counted)."""

    def __init__(self, inner: nn.Module, rows: int, error: Exception) -> None:
        super().__init__()
        self.inner, self.rows, self.error, self.refused = inner, rows, error, 0

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.inner.embed(input_ids)

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor):
        if inputs_embeds.requires_grad and inputs_embeds.shape[0] > self.rows:
            self.refused += 1
            raise self.error
        return self.inner(inputs_embeds, attention_mask, position_ids)


def _run(
    reference: Path, out: Path, samples_per_call: int, rows: int | None = None, error: Exception | None = None
) -> nn.Module:
    classifier, tokenizer = load_classifier(reference / "data" / "train" / "classifier")
    model = classifier if rows is None else SmallDevice(classifier, rows, error or torch.OutOfMemoryError())
    prompts = read_parquet(reference / "data" / "prepared" / "prompts.parquet")
    cfg = AttributionConfig(samples_per_call=samples_per_call, **CFG)
    run_attribution(
        model, prompts, cfg, pad_id=tokenizer.pad_token_id, max_positions=None, out=RunOutput(out, "m")
    )
    return model


@pytest.mark.parametrize(
    "error",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB"),
        RuntimeError("MPS backend out of memory (MPS allocated: 9.1 GB)"),
    ],
    ids=["OutOfMemoryError", "RuntimeError"],
)
def test_out_of_memory_halves_samples_per_call(
    reference: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    with caplog.at_level(logging.WARNING, logger="xurs"):
        model = _run(reference, tmp_path / "adapted", samples_per_call=8, rows=2, error=error)
    _run(reference, tmp_path / "small", samples_per_call=2)
    assert_same_attribute(tmp_path / "adapted", tmp_path / "small")
    messages = [r.getMessage() for r in caplog.records]
    assert (
        sum("out of memory at 8 gradient samples per call" in m and "retrying with 4" in m for m in messages)
        == 2
    )
    assert (
        sum("out of memory at 4 gradient samples per call" in m and "retrying with 2" in m for m in messages)
        == 2
    )
    assert any("Set attribution.samples_per_call=2" in m for m in messages)
    assert model.refused == 4  # two refusals per question, then every batch of 2 fits


def test_other_runtime_errors_are_not_taken_for_out_of_memory(reference: Path, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        _run(
            reference,
            tmp_path / "out",
            8,
            rows=2,
            error=RuntimeError("mat1 and mat2 shapes cannot be multiplied"),
        )


def test_out_of_memory_at_one_sample_names_samples_per_call(reference: Path, tmp_path: Path) -> None:
    prompts = read_parquet(reference / "data" / "prepared" / "prompts.parquet")
    length = len(prompts[prompts["split"] == "test"]["input_ids"].iloc[0])
    with pytest.raises(
        AttributionMemoryError, match=rf"prompt of {length} tokens.*samples_per_call=8 down to 1"
    ):
        _run(reference, tmp_path / "out", samples_per_call=8, rows=0)
    assert not (tmp_path / "out" / "attributions.parquet").exists()


def _oom_hooks(rows: int) -> list[Hook]:
    """Out of memory for gradient batches of more than ``rows`` samples on either forward path: the full
    prompt (``forward(inputs_embeds, ...)``) or the suffix after a reused prefix
    (``forward_after_prefix(cache, inputs_embeds, ...)``; the smoke prompts share their instruction)."""
    classifier = "xurs_pipeline.models.classifier:RandomSetClassifier"
    return [
        Hook(f"{classifier}.forward", action="oom", nth=rows, path_arg=1),
        Hook(f"{classifier}.forward_after_prefix", action="oom", nth=rows, path_arg=2),
    ]


def test_the_stage_adapts_or_stops_with_the_message(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare", "train")
    code, log = run_stage(project, "attribute", hooks=_oom_hooks(0))
    assert code == 2, log[-3000:]  # a deliberate XursError: one line, exit 2 (tasks/runner.py)
    assert "attribution.samples_per_call=2 down to 1" in log
    assert "Traceback" not in log
    assert not (project / "data" / "attribute" / "attributions.parquet").exists()

    code, log = run_stage(project, "attribute", hooks=_oom_hooks(1))
    assert code == 0, log[-3000:]
    assert "out of memory at 2 gradient samples per call" in log
    ours = read_parquet(project / "data" / "attribute" / "attributions.parquet")
    theirs = read_parquet(reference / "data" / "attribute" / "attributions.parquet")
    for a, b in zip(ours["token_signed"], theirs["token_signed"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6 * np.abs(b).max())  # other batches: rounding
