"""Task ``checks``: every App. E check with value, threshold and verdict -> ``<artifacts>/checks/``:

- ``checks.parquet`` (schema ``checks``) and ``checks.json`` (metrics): completeness (Eq. 9, Table 7 /
  App. B.4), comparisons with the repeated runs of ``evaluation.repeat_seeds`` (stage attribute_repeats)
  and with ``evaluation.comparison_runs`` (Tables 2, 6, 7), leave-one-collection-out
  (Table 6), reference endpoints (Eq. 10; a shift above ``evaluation.reference_shift_warning`` fails and
  warns); the controlled-model gates (App. D.3) are the ``gates`` stage's, which needs no attributions;
- ``details/``: per-question comparisons, endpoints (Table 3), clue localisation (Table 9) and the
  model-randomisation movement.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xurs_pipeline.config import RootConfig, attribution_fingerprint, repeat_config, train_run_hash
from xurs_pipeline.contracts import artifact, check_detail, comparison_run, stage_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.evaluation.artifacts import read_attributions, read_prompts
from xurs_pipeline.evaluation.evidence import endpoint_checks, localisation_summary, localisation_table
from xurs_pipeline.evaluation.randomisation import cascade_names, randomisation_check
from xurs_pipeline.evaluation.reattribute import attribution_callable
from xurs_pipeline.evaluation.run_checks import (
    Run,
    comparison_checks,
    completeness_checks,
    leave_one_out_checks,
)
from xurs_pipeline.evaluation.verdicts import Check, checks_frame, checks_summary, json_safe
from xurs_pipeline.io import write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.reporting.headline import verdict_headline
from xurs_pipeline.tasks.attribute_repeats import repeat_dir, repeat_name
from xurs_pipeline.tasks.runner import log


def _randomisation(cfg: RootConfig, prompts: pd.DataFrame, main: Run) -> pd.DataFrame:
    ev = cfg.evaluation
    if ev.randomisation_questions == 0:
        return pd.DataFrame()
    classifier, tokenizer = load_classifier(
        artifact("classifier").at(cfg.paths),
        config_hash=train_run_hash(cfg),
        merge_lora=cfg.attribution.merge_lora,
    )
    record_ids = list(dict.fromkeys(main.frame["record_id"]))[: ev.randomisation_questions]
    max_positions = getattr(classifier.backbone.config, "max_position_embeddings", None)
    attribute = attribution_callable(
        prompts, cfg.attribution, record_ids, tokenizer.pad_token_id, max_positions
    )
    cascade = cascade_names(classifier, "head", ev.randomisation_blocks)
    return randomisation_check(classifier, attribute, cascade, seed=ev.seed, topk=ev.ranking.topk)


def run(cfg: RootConfig) -> dict[str, Any]:
    ev = cfg.evaluation
    details: dict[str, pd.DataFrame] = {}
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    main_dir = artifact("attributions").at(cfg.paths).parent
    main = Run("main", read_attributions(main_dir, attribution_fingerprint(cfg)), main_dir)
    checks = completeness_checks(main, ev.numerics, ev.ig)
    details["leave_one_out"], loo = leave_one_out_checks(main, prompts, ev.ranking)
    checks += loo
    others = [Run(n, read_attributions(comparison_run(cfg.paths, n)), comparison_run(cfg.paths, n))
              for n in ev.comparison_runs]  # fmt: skip
    for seed in ev.repeat_seeds:  # the attribute_repeats stage's runs, each checked against its config
        repeat, fingerprint = repeat_dir(cfg, seed), attribution_fingerprint(repeat_config(cfg, seed))
        others.append(Run(repeat_name(seed), read_attributions(repeat, fingerprint), repeat))
    for other in others:
        details[f"compare_{other.name}"], more = comparison_checks(
            main, other, prompts, ev.numerics, ev.ig, ev.ranking
        )
        checks += more
    endpoints = endpoint_checks(main.frame, ev.reference_shift_warning)
    details["endpoints"] = pd.DataFrame([e.to_dict() for e in endpoints])
    checks += [
        Check("reference_endpoints", f"shift_{e.case}", e.shift, e.warn_above, "<=", 1) for e in endpoints
    ]
    details["localisation"] = localisation_table(main.frame, prompts)
    details["randomisation"] = _randomisation(cfg, prompts, main)
    run_hash, checks_table = stage_hash("checks", cfg), artifact("checks")
    for name, table in details.items():
        write_parquet(table, check_detail(name).at(cfg.paths), check_detail(name).provenance(run_hash))
    write_parquet(checks_frame(checks), checks_table.at(cfg.paths), checks_table.provenance(run_hash))
    summary = checks_summary(checks)
    summary["localisation"] = json_safe(localisation_summary(
        details["localisation"], ev.bootstrap_resamples, ev.confidence, ev.bootstrap_method, ev.seed
    ))  # fmt: skip
    if not details["randomisation"].empty:
        moved = details["randomisation"].groupby("randomised", sort=False)[["spearman", "relative_distance"]]
        summary["randomisation"] = json_safe(moved.median().to_dict(orient="index"))
    write_json(summary, artifact("check_summary").at(cfg.paths))
    log.info("checks: %d of %d passed", summary["n_passed"], summary["n_checks"])
    for c in checks:
        if not c.passed:
            log.warning("check failed: %s/%s = %.6g (threshold %s %g)", c.group, c.name, c.value, c.direction,
                        c.threshold)  # fmt: skip
    return verdict_headline("checks", [c.passed for c in checks])
