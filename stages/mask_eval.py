"""DVC stage ``mask_eval``: zero-masking of explained questions (Eq. 8, Table 1) -> ``<artifacts>/mask_eval/``

- ``per_question.parquet`` (schema ``mask_eval``): per (record_id, option, target function) D of the
  top-ranked token, mean D of the random controls, A(x), and the top-k curve (k = 1..top_k_max);
- ``metrics.json``: per target function the mean advantage with its question-level bootstrap interval,
  the top-k curve, and the attribution budget used.

Reads ``<artifacts>/train/classifier``, ``<artifacts>/prepared/prompts.parquet`` and
``<artifacts>/attribute/attributions.parquet``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from stages._common import log, run_stage
from stages.attribute_targets import TARGETS_DIR, comparison_targets, target_config
from xurs_pipeline.config import RootConfig, attribution_fingerprint, train_run_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.evaluation.artifacts import prompts_by_id, read_attributions, read_prompts
from xurs_pipeline.evaluation.mask_eval import (
    BootstrapSpec,
    attribution_budget,
    effects_frame,
    mask_run,
    masking_precision,
    select_rows,
    summarise,
)
from xurs_pipeline.evaluation.masking import MaskingSpec, classifier_mass_fn
from xurs_pipeline.evaluation.verdicts import json_safe
from xurs_pipeline.io import ArtifactError, Provenance, config_hash, write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier


def body(cfg: RootConfig) -> None:
    ev, artifacts = cfg.evaluation, Path(cfg.paths.artifacts)
    device = torch.device("cuda" if ev.device == "cuda" or (ev.device == "auto" and torch.cuda.is_available())
                          else "cpu")  # fmt: skip
    try:
        prompts = read_prompts(artifacts / "prepared" / "prompts.parquet", data_config_hash(cfg.data))
        runs = [read_attributions(artifacts / "attribute", attribution_fingerprint(cfg))]
        for fn in comparison_targets(cfg):  # the attribute_targets stage's runs (issue 17)
            fingerprint = attribution_fingerprint(target_config(cfg, fn))
            runs.append(read_attributions(artifacts / TARGETS_DIR / fn, fingerprint))
        attributions = pd.concat(runs, ignore_index=True)
        rows = select_rows(attributions, ev.targets, ev.max_questions)
        prompts_by_id(prompts, list(rows["record_id"]), str(artifacts / "attribute"))
        classifier, _ = load_classifier(artifacts / "train" / "classifier", config_hash=train_run_hash(cfg))
        classifier.to(device)
        spec = MaskingSpec(ev.n_random, ev.top_k_max, ev.seed, ev.mask_batch_size)
        effects = mask_run(classifier_mass_fn(classifier), classifier.embed, prompts, rows, spec, device)
    except (ArtifactError, ValueError, KeyError) as err:
        log.error("mask_eval: %s", err)
        raise SystemExit(1) from err
    frame = effects_frame(effects)
    boot = BootstrapSpec(ev.bootstrap_resamples, ev.confidence, ev.bootstrap_method, ev.seed)
    budget = {**attribution_budget(rows), "masking_precision": masking_precision(classifier.backbone)}
    metrics = {"targets": summarise(frame, boot), "budget": budget}
    run = config_hash({"evaluation": asdict(ev)})
    out = artifacts / "mask_eval"
    write_parquet(frame, out / "per_question.parquet", Provenance("mask_eval", 1, run))
    write_json(json_safe(metrics), out / "metrics.json")
    for fn, m in metrics["targets"].items():
        log.info("mask_eval %s: %d questions, mean advantage %.4f [%.4f, %.4f]", fn, m["questions"],
                 m["mean_advantage"], m["ci_low"], m["ci_high"])  # fmt: skip


if __name__ == "__main__":
    run_stage("mask_eval", body)
