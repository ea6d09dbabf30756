"""Task ``gates``: prepared prompts + predictions -> ``<artifacts>/gates/`` (App. D.3), no attribution:

- ``gates.parquet`` (schema ``gates``): one row per controlled-model gate and split in
  ``evaluation.gate_splits``: split, group (familiar/unseen templates, or all rows), name, value,
  threshold, direction, n, passed;
- ``gates.json`` (detail metrics for ``xurs gates-sweep``; DVC shows ``headline.json``): per split the
  gate values by template group, ``valid_share``, ``passed`` and ``n_failed``.

Data the gates do not apply to (MedQA: no controlled pairs) gives an empty table and
``{"skipped": "<reason>"}``; that is not a failure.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.evaluation.artifacts import read_predictions, read_prompts
from xurs_pipeline.evaluation.gate_results import (
    GATE_COLUMNS,
    applicable_splits,
    empty_gate_frame,
    gate_frame,
    gate_summary,
)
from xurs_pipeline.io import config_hash, write_json, write_parquet
from xurs_pipeline.reporting.headline import verdict_headline
from xurs_pipeline.tasks.runner import log


def run(cfg: RootConfig) -> dict[str, Any]:
    ev = cfg.evaluation
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    predictions = read_predictions(artifact("predictions").at(cfg.paths))
    splits, skipped = applicable_splits(prompts, predictions, ev.gate_splits)
    frame = gate_frame(prompts, predictions, ev.gates, splits) if splits else empty_gate_frame()
    run_hash = config_hash({"gates": asdict(ev.gates), "gate_splits": list(ev.gate_splits)})
    gates, gate_metrics = artifact("gates"), artifact("gate_metrics")
    write_parquet(
        frame, gates.at(cfg.paths), gates.provenance(run_hash), required_columns=tuple(GATE_COLUMNS)
    )
    summary = {"skipped": skipped} if skipped else gate_summary(frame)
    write_json(summary, gate_metrics.at(cfg.paths), gate_metrics.provenance(run_hash))
    if skipped:
        log.info("gates: skipped: %s", skipped)
    else:
        for split, entry in summary.items():
            log.info(
                "gates %s: %d of %d passed", split, entry["n_checks"] - entry["n_failed"], entry["n_checks"]
            )
        for row in frame[~frame["passed"]].itertuples(index=False):
            log.warning(
                "gate failed: %s/%s/%s = %.6g (threshold %s %g)",
                row.split,
                row.group,
                row.name,
                row.value,
                row.direction,
                row.threshold,
            )
    return verdict_headline("gates", frame["passed"].tolist())
