"""Task ``mask_eval``: zero-masking of explained questions (Eq. 8, Table 1) -> ``<artifacts>/mask_eval/``

- ``per_question.parquet`` (schema ``mask_eval``): per (record_id, option, target function) D of the
  top-ranked token, mean D of the random controls, A(x), and the top-k curve (k = 1..top_k_max);
- ``metrics.json``: per target function the mean advantage with its question-level bootstrap interval,
  the top-k curve, and the attribution budget used; ``clue_masking``: the same for masking the clue
  against equal-length control windows (controlled data);
- ``clue_masking.parquet``: per explained question with a clue, D of the clue and of its control windows
  (``evaluation.clue_masking``).

Reads ``<artifacts>/train/classifier``, ``<artifacts>/prepared/prompts.parquet`` and
``<artifacts>/attribute/attributions.parquet``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.config import RootConfig, attribution_fingerprint, comparison_targets, target_config
from xurs_pipeline.contracts import artifact, stage_hash, target_dir
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.evaluation.artifacts import prompts_by_id, read_attributions, read_prompts
from xurs_pipeline.evaluation.clue_masking import clue_masking_frame, clue_masking_run, summarise_clue_masking
from xurs_pipeline.evaluation.mask_eval import (
    BootstrapSpec,
    attribution_budget,
    effects_frame,
    masking_precision,
    select_rows,
    summarise,
)
from xurs_pipeline.evaluation.masking_model import masking_model
from xurs_pipeline.evaluation.verdicts import json_safe
from xurs_pipeline.io import write_json, write_parquet
from xurs_pipeline.reporting.headline import mask_headline
from xurs_pipeline.tasks.runner import log


def run(cfg: RootConfig) -> dict[str, Any]:
    ev, attribute_dir = cfg.evaluation, artifact("attributions").at(cfg.paths).parent
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    rows = select_rows(_attributions(cfg), ev.targets, ev.max_questions)
    prompts_by_id(prompts, list(rows["record_id"]), str(attribute_dir))
    model = masking_model(cfg)  # the function the attributions explain
    classifier, device = model.classifier, model.device
    effects = model.mask(prompts, rows)
    clue_effects = clue_masking_run(
        classifier_mass_fn(classifier), classifier.embed, prompts, rows, ev.mask_batch_size, device
    )
    frame = effects_frame(effects)
    boot = BootstrapSpec(ev.bootstrap_resamples, ev.confidence, ev.bootstrap_method, ev.seed)
    clue_frame = clue_masking_frame(clue_effects)
    metrics = {
        "targets": summarise(frame, boot),
        "clue_masking": summarise_clue_masking(
            clue_frame, boot.resamples, boot.confidence, boot.method, boot.seed
        ),
        "budget": {**attribution_budget(rows), "masking_precision": masking_precision(classifier.backbone)},
    }
    run_hash = stage_hash("mask_eval", cfg)
    for name, table in (("mask_effects", frame), ("clue_masking", clue_frame)):
        write_parquet(table, artifact(name).at(cfg.paths), artifact(name).provenance(run_hash))
    write_json(json_safe(metrics), artifact("mask_metrics").at(cfg.paths))
    for fn, m in metrics["targets"].items():
        values = (m["questions"], m["mean_advantage"], m["ci_low"], m["ci_high"])
        log.info("mask_eval %s: %d questions, mean advantage %.4f [%.4f, %.4f]", fn, *values)
    return json_safe(mask_headline(metrics["targets"]))


def _attributions(cfg: RootConfig) -> pd.DataFrame:
    """The main run's rows and the attribute_targets stage's run of each comparison target, each read
    against its own config."""
    runs = [read_attributions(artifact("attributions").at(cfg.paths).parent, attribution_fingerprint(cfg))]
    for fn in comparison_targets(cfg):
        fingerprint = attribution_fingerprint(target_config(cfg, fn))
        runs.append(read_attributions(target_dir(cfg.paths, fn), fingerprint))
    return pd.concat(runs, ignore_index=True)
