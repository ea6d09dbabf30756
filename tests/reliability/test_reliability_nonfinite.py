"""Non-finite values are caught where they arise, reported with question and reference ids, optionally
retried in float32, and never written as numbers.

- attribution in float16: a token embedding of +60000 in a question and -60000 at the same position of
  one training reference (the "massive activations" of real LLMs) make X - B overflow float16 in the
  EG/IG path for exactly that (question, reference) pair, while every forward pass stays finite;
- a NaN in a checkpoint: in the head (refused on load), or in one backbone embedding row, which only
  the prompts containing that token hit (predict names them; train names them, from their features in
  head-only training, from their outputs when the backbone is trained).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from reliability_proc import run_stage
from reliability_project import copy_project
from safetensors.torch import load_file, save_file

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.question import NonFiniteError
from xurs_pipeline.attribution.runner import RunOutput, run_attribution
from xurs_pipeline.io import ArtifactError, read_json, read_parquet
from xurs_pipeline.models.checkpoint import load_classifier

LENGTH, SPOT, BIG = (
    12,
    5,
    60000.0,
)  # prompt length, position of the outlier tokens, |embedding| (fp16 max 65504)
HIGH, LOW = 300, 301  # token ids given +BIG and -BIG embeddings


def _frame() -> pd.DataFrame:
    """Two questions and four references of equal length (no padding); test-0 holds HIGH at SPOT, the
    reference train-2 holds LOW there."""
    rng = np.random.default_rng(0)
    rows = []
    for split, count in (("train", 4), ("test", 2)):
        for i in range(count):
            ids = [1, *rng.integers(3, 290, size=LENGTH - 1).tolist()]
            if (split, i) == ("test", 0):
                ids[SPOT] = HIGH
            if (split, i) == ("train", 2):
                ids[SPOT] = LOW
            rows.append(
                {
                    "record_id": f"{split}-{i}",
                    "split": split,
                    "input_ids": ids,
                    "answer_idx": i % 4,
                    "eligible": [False] + [True] * (LENGTH - 1),
                }
            )
    return pd.DataFrame(rows)


def _model(reference: Path, dtype: torch.dtype) -> tuple[torch.nn.Module, int]:
    model, tokenizer = load_classifier(reference / "data" / "train" / "classifier")
    model.to(torch.float16)  # the weights as a float16 run holds them (widened exactly for float32)
    with torch.no_grad():
        table = model.backbone.get_input_embeddings().weight
        table[HIGH], table[LOW] = BIG, -BIG
    return model.to(dtype), int(tokenizer.pad_token_id)


def _attribute(reference: Path, out: Path, dtype: torch.dtype, **cfg: object) -> dict:
    model, pad = _model(reference, dtype)
    config = AttributionConfig(
        method="ig",
        reference="train",
        refs_per_collection=4,
        ig_points=4,
        samples_per_call=4,
        target="all",
        progress=False,
        precision=str(dtype).removeprefix("torch."),
        **cfg,
    )
    metrics = run_attribution(model, _frame(), config, pad_id=pad, max_positions=64, out=RunOutput(out, "x"))
    assert next(model.parameters()).dtype == dtype
    return metrics


def _all_finite(table: pd.DataFrame) -> bool:
    for column in table.columns:
        values = table[column].tolist()
        flat = [v for x in values for v in (x if isinstance(x, list | np.ndarray) else [x])]
        numbers = [float(v) for v in flat if isinstance(v, int | float | np.floating) and v is not None]
        if not np.isfinite(numbers).all():
            return False
    return True


def test_float16_overflow_is_reported_with_question_and_reference(reference: Path, tmp_path: Path) -> None:
    metrics = _attribute(reference, tmp_path / "f16", torch.float16)
    failures = read_json(tmp_path / "f16" / "nonfinite.json")["failures"]
    assert [(f["record_id"], f["where"], f["reference_ids"], f["precision"]) for f in failures] == [
        ("test-0", "gradient", ["train-2"], "float16")
    ]
    table = read_parquet(tmp_path / "f16" / "attributions.parquet")
    assert sorted(set(table["record_id"])) == ["test-1"]  # no row, no number, for the failed question
    assert _all_finite(table)
    assert metrics["nonfinite_questions"] == 1
    _attribute(reference, tmp_path / "f32", torch.float32)  # the same weights and inputs in float32: finite
    assert read_json(tmp_path / "f32" / "nonfinite.json")["failures"] == []


def test_float16_overflow_can_raise_naming_question_and_reference(reference: Path, tmp_path: Path) -> None:
    with pytest.raises(NonFiniteError, match=r"record test-0.*non-finite gradient in float16.*train-2"):
        _attribute(reference, tmp_path / "out", torch.float16, on_nonfinite="raise")
    assert not (tmp_path / "out" / "attributions.parquet").exists()


def test_float16_overflow_can_be_retried_in_float32(reference: Path, tmp_path: Path) -> None:
    _attribute(reference, tmp_path / "retry", torch.float16, on_nonfinite="retry")
    _attribute(reference, tmp_path / "f32", torch.float32)
    assert read_json(tmp_path / "retry" / "nonfinite.json")["failures"] == []
    retried = read_parquet(tmp_path / "retry" / "attributions.parquet").set_index(["record_id", "target"])
    wide = read_parquet(tmp_path / "f32" / "attributions.parquet").set_index(["record_id", "target"])
    assert set(retried.loc["test-0", "precision"]) == {"float32"}
    assert set(retried.loc["test-1", "precision"]) == {"float16"}
    for target in range(4):  # the retried question is exactly the float32 run's
        a, b = retried.loc[("test-0", target)], wide.loc[("test-0", target)]
        assert np.array_equal(a["token_signed"], b["token_signed"])
        assert a["width_input"] == b["width_input"]


def test_nan_head_weights_are_refused_on_load(reference: Path, tmp_path: Path) -> None:
    directory = tmp_path / "classifier"
    shutil.copytree(reference / "data" / "train" / "classifier", directory)
    weights = load_file(directory / "head.safetensors")
    name = sorted(weights)[0]
    weights[name].view(-1)[3] = float("nan")
    save_file(weights, directory / "head.safetensors")
    with pytest.raises(ArtifactError, match=rf"head\.safetensors: non-finite head weights.*'{name}': 1"):
        load_classifier(directory, backbone_dir=reference / "data" / "backbone")  # the copy's backbone


def _poison_backbone(project: Path, splits: tuple[str, ...]) -> list[str]:
    """Set one token's embedding to NaN in the backbone weights; returns the record ids (of ``splits``)
    whose prompts contain the token, chosen so that some do and some do not."""
    prompts = read_parquet(project / "data" / "prepared" / "prompts.parquet")
    rows = prompts[prompts["split"].isin(splits)]
    counts: dict[int, int] = {}
    for ids in rows["input_ids"]:
        for token in set(ids.tolist()):
            counts[token] = counts.get(token, 0) + 1
    token = min(t for t, n in counts.items() if 0 < n < len(rows))
    path = project / "data" / "backbone" / "model.safetensors"
    weights = load_file(path)
    (key,) = [k for k in weights if k.endswith("embed_tokens.weight")]
    weights[key][token] = float("nan")
    save_file(weights, path, metadata={"format": "pt"})
    return sorted(rows[[token in ids for ids in rows["input_ids"]]]["record_id"])


def test_predict_names_the_records_a_nan_weight_reaches(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare", "train")
    hit = _poison_backbone(project, ("dev",))
    code, log = run_stage(project, "predict")
    assert code == 2, log[-3000:]  # NonFiniteValuesError, an XursError: one line, exit 2
    assert f"non-finite classifier outputs for {len(hit)} of 4 records" in log
    assert all(record in log for record in hit)
    assert not (project / "data" / "predict").exists()


def test_train_names_the_prompts_whose_features_are_not_finite(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare")
    hit = _poison_backbone(project, ("train",))
    code, log = run_stage(project, "train")
    assert code == 2, log[-3000:]  # NonFiniteValuesError, an XursError: one line, exit 2
    assert f"backbone features of {len(hit)} of 8 prompts are not finite (e.g. {hit}" in log
    assert not (project / "data" / "train").exists()


def test_train_names_the_records_whose_outputs_are_not_finite(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "p", "backbone", "prepare")
    hit = _poison_backbone(project, ("train",))
    code, log = run_stage(project, "train", "train.adaptation=partial", "train.partial_layers=1")
    assert code == 2, log[-3000:]  # NonFiniteValuesError, an XursError: one line, exit 2
    assert "epoch 1, optimizer step " in log  # the logs count epochs from 1
    named = log.split("non-finite outputs for records ")[1].split("]")[0]
    assert named.strip("[").split(", ")  # the records of the first batch that holds the token, only those
    assert all(record.strip("'") in hit for record in named.strip("[").split(", "))
    assert not (project / "data" / "train").exists()
