"""DVC stage ``predict``: trained classifier + prepared prompts -> ``<artifacts>/predict/``:

- ``predictions.parquet`` (schema ``predictions``): per question the 14 beliefs, intermediate values,
  corrected masses, Bel/Pl/width/BetP per option, the selected answer, s, r, rescaled, n_negative,
  total adjustment (Sec. 5.3), plus ``split``;
- ``metrics.json``: per split accuracy, answer NLL and error-detection AUROC from width and from low
  selected-answer probability (Sec. 6.1);
- ``correction_audit.json``: this configuration's row of the correction table (Table 8), per split.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd
from accelerate import PartialState

from stages._common import log, run_stage
from xurs_pipeline.config import RootConfig, configuration_label, train_run_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import PROMPTS_FILE, read_prompts
from xurs_pipeline.io import ArtifactError, Provenance, config_hash, write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.reporting.headline import HEADLINE_FILE, predict_headline, write_headline
from xurs_pipeline.train.metrics import correction_audit, prediction_metrics, with_result_flags
from xurs_pipeline.train.predict import PREDICTION_COLUMNS, classifier_outputs, prediction_frame
from xurs_pipeline.train.prompts import split_examples


def body(cfg: RootConfig) -> None:
    artifacts = Path(cfg.paths.artifacts)
    prompts_path = artifacts / "prepared" / PROMPTS_FILE
    try:
        prompts = read_prompts(prompts_path, data_config_hash(cfg.data))
        classifier, tokenizer = load_classifier(
            artifacts / "train" / "classifier", config_hash=train_run_hash(cfg)
        )
        head_only = classifier.meta["adaptation"] == "head_only"
        device = PartialState().device
        frames, metrics, audit = [], {}, {}
        for split in cfg.train.predict_splits:
            examples = split_examples(
                prompts, split, classifier.backbone.config.vocab_size, where=str(prompts_path)
            )
            out = classifier_outputs(
                classifier, examples.data.inputs, tokenizer.pad_token_id, cfg.train.eval_batch_size,
                feature_cache_dir=cfg.train.feature_cache_dir if head_only else None, device=device,
            )  # fmt: skip
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
    except (ArtifactError, ValueError, FloatingPointError) as err:  # nothing is written
        log.error("predict: %s", err)
        raise SystemExit(1) from err
    out_dir = artifacts / "predict"
    run = config_hash({"model": asdict(cfg.model), "train": asdict(cfg.train), "data": asdict(cfg.data)})
    write_parquet(
        pd.concat(frames, ignore_index=True), out_dir / "predictions.parquet",
        Provenance("predictions", 1, run), required_columns=(*PREDICTION_COLUMNS, "split"),
    )  # fmt: skip
    write_json(metrics, out_dir / "metrics.json", Provenance("prediction_metrics", 1, run))
    write_headline(predict_headline(metrics, cfg.train.predict_splits), out_dir / HEADLINE_FILE)
    write_json(audit, out_dir / "correction_audit.json", Provenance("correction_audit", 1, run))


if __name__ == "__main__":
    run_stage("predict", body)
