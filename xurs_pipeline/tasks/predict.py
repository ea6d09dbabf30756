"""Task ``predict``: trained classifier + prepared prompts -> ``<artifacts>/predict/``:

- ``predictions.parquet`` (schema ``predictions``): per question the 14 beliefs, intermediate values,
  corrected masses, Bel/Pl/width/BetP per option, the selected answer, s, r, rescaled, n_negative,
  total adjustment (Sec. 5.3), plus ``split``;
- ``metrics.json``: per split accuracy, answer NLL and error-detection AUROC from width and from low
  selected-answer probability (Sec. 6.1);
- ``correction_audit.json``: this configuration's row of the correction table (Table 8), per split.

Several processes (``torchrun --nproc_per_node N -m stages predict``) each compute a contiguous share of
every split's rows; the main process gathers them in order and writes the same files as one process.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xurs_pipeline.config import RootConfig, configuration_label, train_run_hash
from xurs_pipeline.contracts import artifact, stage_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.io import config_hash, write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.processes import process_group
from xurs_pipeline.reporting.headline import predict_headline
from xurs_pipeline.tasks.runner import log
from xurs_pipeline.train.metrics import correction_audit, prediction_metrics, with_result_flags
from xurs_pipeline.train.predict import (
    classifier_outputs,
    gathered_outputs,
    prediction_frame,
    process_rows,
)
from xurs_pipeline.train.prompts import split_examples


def run(cfg: RootConfig) -> dict[str, Any] | None:
    state = process_group()  # several processes split each split's rows; the main one writes
    prompts_path = artifact("prompts").at(cfg.paths)
    prompts = read_prompts(prompts_path, data_config_hash(cfg.data))
    classifier, tokenizer = load_classifier(
        artifact("classifier").at(cfg.paths), config_hash=train_run_hash(cfg)
    )
    head_only = classifier.meta["adaptation"] == "head_only"
    frames, metrics, audit = [], {}, {}
    for split in cfg.train.predict_splits:  # nothing is written before every split is computed
        examples = split_examples(
            prompts, split, classifier.backbone.config.vocab_size, where=str(prompts_path)
        )
        out = classifier_outputs(
            classifier,
            examples.data.inputs,
            tokenizer.pad_token_id,
            cfg.train.eval_batch_size,
            feature_cache_dir=cfg.train.feature_cache_dir if head_only else None,
            device=state.device,
            rows=process_rows(len(examples.record_ids), state),
        )
        out = gathered_outputs(out, state)
        frame = prediction_frame(
            out,
            classifier.output_kind,
            examples.data.labels.tolist(),
            examples.record_ids,
            cfg.model.conversion,
        )
        frame.insert(1, "split", split)
        frames.append(frame)
        metrics[split] = prediction_metrics(with_result_flags(frame, prompts))
        audit[split] = correction_audit(frame, configuration_label(cfg))
        log.info("predict %s: %s", split, metrics[split])
    if state.is_main_process:  # (gathered_outputs waited for every process)
        _write(cfg, frames, metrics, audit)
    state.wait_for_everyone()  # a next stage in the same processes reads what the main process wrote
    return predict_headline(metrics, cfg.train.predict_splits, audit) if state.is_main_process else None


def _write(cfg: RootConfig, frames: list[pd.DataFrame], metrics: dict, audit: dict) -> None:
    run_hash = config_hash({"classifier": train_run_hash(cfg), "predict": stage_hash("predict", cfg)})
    predictions = artifact("predictions")
    write_parquet(
        pd.concat(frames, ignore_index=True),
        predictions.at(cfg.paths),
        predictions.provenance(run_hash),
        required_columns=predictions.columns,
    )
    for name, payload in (("prediction_metrics", metrics), ("correction_audit", audit)):
        write_json(payload, artifact(name).at(cfg.paths), artifact(name).provenance(run_hash))
