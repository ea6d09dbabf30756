"""The backbone, train and predict tasks end to end on the tiny model, and the errors they raise on bad input
(the stage runner turns the deliberate ones, XursError, into one line and exit status 2)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rs_fixtures import make_prompts

from xurs_pipeline.config import RootConfig, validate
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import PROMPTS_FILE, prompts_provenance
from xurs_pipeline.io import ArtifactError, read_json, read_parquet, read_safetensors, write_parquet
from xurs_pipeline.models.backbone import load_backbone_dir
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.tasks import backbone as backbone_stage
from xurs_pipeline.tasks import predict as predict_stage
from xurs_pipeline.tasks import train as train_stage
from xurs_pipeline.tasks import train_head as train_head_stage
from xurs_pipeline.train.predict import classifier_outputs


def _config(tmp_path: Path, **train: object) -> RootConfig:
    return validate(
        {
            "experiment_name": "unit",
            "paths": {"artifacts": str(tmp_path / "data")},
            "model": {"backbone": "tiny", "local_files_only": True},
            "train": {
                "max_epochs": 2,
                "batch_size": 8,
                "lr_head": 1e-2,
                "state_dir": str(tmp_path / "state"),
                "feature_cache_dir": str(tmp_path / "features"),
                **train,
            },
        }
    )


def _write_prompts(cfg: RootConfig) -> None:
    tokenizer = load_backbone_dir(Path(cfg.paths.artifacts) / "backbone").tokenizer
    rows = []
    for split, n, start in (("train", 24, 0), ("dev", 8, 100), ("test", 12, 200)):
        data = make_prompts(tokenizer, n, start)
        for i, (ids, label) in enumerate(zip(data.inputs, data.labels.tolist(), strict=True)):
            rows.append(
                {
                    "record_id": f"{split}-{i}",
                    "split": split,
                    "source": "synthetic_v1",
                    "question": "q",
                    "options": ["a", "b", "c", "d"],
                    "answer_idx": label,
                    "prompt": tokenizer.decode(ids),
                    "input_ids": ids,
                    "token_start": [0] * len(ids),
                    "token_end": [0] * len(ids),
                    "sections": ["question"] * len(ids),
                    "eligible": [True] * len(ids),
                    "truncated": False,
                }
            )
    path = Path(cfg.paths.artifacts) / "prepared" / PROMPTS_FILE
    write_parquet(pd.DataFrame(rows), path, prompts_provenance(data_config_hash(cfg.data)))


def test_backbone_train_predict_end_to_end(tmp_path) -> None:
    cfg = _config(tmp_path)
    data = Path(cfg.paths.artifacts)
    backbone_stage.run(cfg)
    _write_prompts(cfg)
    train_stage.run(cfg)
    summary = read_json(data / "train" / "train_metrics.json")
    assert (summary["n_train"], summary["n_dev"], summary["epochs_run"]) == (24, 8, 2)
    assert summary["feature_cache_hits"] == [False, False]
    # global batch 32 (the default, Table 4) in one process of batch 8: 4 accumulation steps
    assert (summary["global_batch"], summary["processes"], summary["grad_accum"]) == (32, 1, 4)
    predict_stage.run(cfg)
    predictions = read_parquet(data / "predict" / "predictions.parquet")
    assert predictions.groupby("split").size().to_dict() == {"dev": 8, "test": 12}
    metrics = read_json(data / "predict" / "metrics.json")
    test = predictions[predictions["split"] == "test"]
    assert metrics["test"]["n"] == 12
    assert metrics["test"]["accuracy"] == pytest.approx(test["correct"].mean())
    audit = read_json(data / "predict" / "correction_audit.json")["test"]
    assert audit["configuration"] == "unit/tiny/head_only/seed7"
    assert audit["rescaling_pct"] == pytest.approx(100 * test["rescaled"].mean())
    # The predictions are the saved classifier's: recompute one row through the full model.
    classifier, tokenizer = load_classifier(data / "train" / "classifier")
    ids = read_parquet(data / "prepared" / PROMPTS_FILE).set_index("record_id").loc["test-3", "input_ids"]
    out = classifier_outputs(classifier, [list(ids)], tokenizer.pad_token_id)
    row = test.set_index("record_id").loc["test-3"]
    np.testing.assert_allclose(out.masses[0].numpy(), row["masses"], atol=1e-5)
    # Another seed reuses the cached backbone features.
    train_stage.run(_config(tmp_path, seed=17))
    assert read_json(data / "train" / "train_metrics.json")["feature_cache_hits"] == [True, True]


def test_stages_exit_cleanly_on_bad_input(tmp_path) -> None:
    cfg = _config(tmp_path)
    data = Path(cfg.paths.artifacts)
    backbone_stage.run(cfg)
    _write_prompts(cfg)
    mass15 = validate({**_as_dict(cfg), "model": {"backbone": "tiny", "output_kind": "mass15"}})
    with pytest.raises(ValueError, match="target_masses"):  # the prompts have none
        train_stage.run(mass15)
    assert not (data / "train").exists()
    train_stage.run(cfg)
    # Rebuild the backbone with other weights: the trained checkpoint no longer matches it.
    other = validate({**_as_dict(cfg), "model": {"backbone": "tiny", "tiny_seed": 1}})
    backbone_stage.run(other)
    with pytest.raises(ArtifactError):
        predict_stage.run(cfg)
    assert not (data / "predict").exists()
    missing_gguf = validate(
        {**_as_dict(cfg), "model": {"backbone": "gguf", "source": str(tmp_path / "x.gguf")}}
    )
    before = sorted(p.name for p in (data / "backbone").iterdir())
    with pytest.raises(FileNotFoundError, match=r"x\.gguf"):
        backbone_stage.run(missing_gguf)
    assert sorted(p.name for p in (data / "backbone").iterdir()) == before


def _as_dict(cfg: RootConfig) -> dict:
    return asdict(cfg)


# a partial run whose learning rates keep the head it starts from
FROZEN_PARTIAL = dict(
    adaptation="partial", partial_layers=1, global_batch=8, max_epochs=1, lr_head=1e-12, lr_adapter=1e-12
)


def test_head_first_trains_the_head_only_model_first_and_starts_from_it(tmp_path) -> None:
    """App. B.1: the adapted run's head starts from the train_head stage's head-only model. With learning
    rates of 1e-12 the partial run keeps its starting head, so it must equal the head-only one."""
    cfg = _config(tmp_path, **FROZEN_PARTIAL, head_first=True, head_first_epochs=2)
    data = Path(cfg.paths.artifacts)
    backbone_stage.run(cfg)
    _write_prompts(cfg)
    train_head_stage.run(cfg)
    head_run = read_json(data / "train_head" / "train_metrics.json")
    assert (head_run["adaptation"], head_run["epochs_run"]) == ("head_only", 2)
    assert head_run["init_head_from"] == ""
    train_stage.run(cfg)
    run = read_json(data / "train" / "train_metrics.json")
    assert (run["adaptation"], run["init_head_from"]) == ("partial", str(data / "train_head" / "classifier"))
    start = read_safetensors(data / "train_head" / "classifier" / "head.safetensors")
    end = read_safetensors(data / "train" / "classifier" / "head.safetensors")
    for name, weights in start.items():
        np.testing.assert_allclose(end[name].numpy(), weights.numpy(), atol=1e-6)
    # without head_first the stage only says it was skipped, and the run starts from a fresh head
    cold = _config(tmp_path, **FROZEN_PARTIAL, seed=8)
    train_head_stage.run(cold)
    assert "skipped" in read_json(data / "train_head" / "train_metrics.json")
    train_stage.run(cold)
    fresh = read_safetensors(data / "train" / "classifier" / "head.safetensors")
    assert any(not np.allclose(fresh[n].numpy(), w.numpy(), atol=1e-3) for n, w in start.items())
