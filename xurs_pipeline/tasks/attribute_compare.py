"""Task ``attribute_compare``: the main attribution run's questions explained with each of
``evaluation.compare_methods`` as well (same classifier, prompts, selection and reference settings; each
method's own keys at their defaults), and how far all the methods agree -> ``<artifacts>/compare/``:

- ``runs/<method>/`` (the ``attribute`` stage's format) and ``runs/index.json``;
- ``agreement.parquet`` (schema ``method_agreement``): per explained answer and pair of methods (the main
  one first), Spearman's rho of their token magnitudes and the overlap of their top 5
  (``evaluation/method_agreement.py``);
- ``masking.parquet`` (schema ``method_masking``): Table 1's zero-masking (Eq. 8, ``mask_eval``'s protocol
  and questions) with each method's ranking, per explained answer;
- ``metrics.json``: per pair the medians, per method its cost per question and mean advantage A with its
  bootstrap interval.

Without compare methods every file is written empty and no model is loaded. The report shows the first
compare method beside the main one on each question page (``reporting/build_report.with_comparison``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xurs_pipeline.attribution.runner import shard_seconds
from xurs_pipeline.config import RootConfig, attribution_fingerprint, compare_configs
from xurs_pipeline.contracts import artifact, compare_dir, stage_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.evaluation.artifacts import read_attributions, read_prompts
from xurs_pipeline.evaluation.mask_eval import BootstrapSpec, effects_frame, select_rows, summarise
from xurs_pipeline.evaluation.masking_model import masking_model
from xurs_pipeline.evaluation.method_agreement import (
    agreement_frame,
    method_costs,
    summarise_agreement,
)
from xurs_pipeline.evaluation.verdicts import json_safe
from xurs_pipeline.io import write_json, write_parquet
from xurs_pipeline.runs.attribution import attribute_variants, attribution_run


def run(cfg: RootConfig) -> None:
    others = compare_configs(cfg)
    seconds = attribute_variants(
        artifact("compare_runs").at(cfg.paths), {m: attribution_run(o) for m, o in others.items()}, "compare"
    )
    main_dir = artifact("attributions").at(cfg.paths).parent
    runs = {}
    if others:
        runs[cfg.attribution.method] = read_attributions(main_dir, attribution_fingerprint(cfg))
        runs |= {m: read_attributions(compare_dir(cfg.paths, m)) for m in others}
    seconds[cfg.attribution.method] = shard_seconds(main_dir)
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    agreement = agreement_frame(runs, prompts)
    masking, advantage = _masking(cfg, prompts, runs)
    metrics = {
        "methods": list(runs),
        "pairs": summarise_agreement(agreement),
        "costs": {m: method_costs(rows, seconds[m]) for m, rows in runs.items()},
        "zero_masking": advantage,
    }
    run_hash = stage_hash("attribute_compare", cfg)
    for name, table in (("method_agreement", agreement), ("method_masking", masking)):
        write_parquet(table, artifact(name).at(cfg.paths), artifact(name).provenance(run_hash))
    write_json(json_safe(metrics), artifact("method_metrics").at(cfg.paths))


def _masking(
    cfg: RootConfig, prompts: pd.DataFrame, runs: dict[str, pd.DataFrame]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Eq. 8's zero-masking with each method's ranking on the questions ``mask_eval`` masks (one table, a
    ``method`` column), and per method Table 1's mean advantage with its bootstrap interval."""
    if not runs:
        return pd.DataFrame(columns=["record_id", "target", "method"]), {}
    ev = cfg.evaluation
    target = cfg.attribution.target_fn
    rows = pd.concat(
        [select_rows(r.assign(target_fn=target), [target], ev.max_questions) for r in runs.values()],
        ignore_index=True,
    )
    frame = effects_frame(masking_model(cfg).mask(prompts, rows, by="method"))
    boot = BootstrapSpec(ev.bootstrap_resamples, ev.confidence, ev.bootstrap_method, ev.seed)
    return frame.rename(columns={"target_fn": "method"}), summarise(frame, boot)
