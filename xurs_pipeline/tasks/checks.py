"""Task ``checks``: every App. E check with value, threshold and verdict -> ``<artifacts>/checks/``:

- ``checks.parquet`` (schema ``checks``) and ``checks.json`` (metrics): completeness (Eq. 9, Table 7 /
  App. B.4), comparisons with the repeated runs of ``evaluation.repeat_seeds`` (stage attribute_repeats)
  and with ``evaluation.comparison_runs`` (Tables 2, 6, 7), leave-one-collection-out
  (Table 6); every one of them fails only on a defect of the attribution (the headline's
  ``checks_failed``). The controlled-model gates (App. D.3) are the ``gates`` stage's, which needs no
  attributions. With repeats the headline also carries App. B.4's vector figures against them
  (``cos_rerun``, ``dist_rerun``: ``reporting.headline.rerun_headline``);
- the reference endpoints (Eq. 10, Table 3) are a diagnostic, not a check: per question, which width
  difference the explanation concerns (natural or prepared reference; ``checks.json``'s ``endpoints``);
- ``details/``: per-question comparisons, endpoints (Table 3), clue localisation (Table 9) and the
  model-randomisation movement.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xurs_pipeline.config import RootConfig, attribution_fingerprint, repeat_config, train_run_hash
from xurs_pipeline.contracts import artifact, check_detail, comparison_run, repeat_dir, stage_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.evaluation.artifacts import read_attributions, read_prompts, run_records
from xurs_pipeline.evaluation.clue_nulls import (
    clue_nulls,
    input_only_frame,
    live_by_question,
    prepared_references,
    records_frame,
)
from xurs_pipeline.evaluation.comparisons import RunRecord
from xurs_pipeline.evaluation.evidence import endpoint_checks, localisation_summary, localisation_table
from xurs_pipeline.evaluation.randomisation import cascade_names, randomisation_check, randomised_runs
from xurs_pipeline.evaluation.reattribute import attribution_callable
from xurs_pipeline.evaluation.references import endpoints_summary
from xurs_pipeline.evaluation.run_checks import (
    CheckedRun,
    comparison_checks,
    completeness_checks,
    leave_one_out_checks,
)
from xurs_pipeline.evaluation.verdicts import checks_frame, checks_summary, json_safe
from xurs_pipeline.io import write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.reporting.headline import rerun_headline, verdict_headline
from xurs_pipeline.tasks.runner import log


def _has_clue(prompts: pd.DataFrame, main: CheckedRun) -> bool:
    if "clue_positions" not in prompts.columns:
        return False
    explained = prompts[prompts["record_id"].isin(set(main.frame["record_id"]))]
    return bool(explained["clue_positions"].map(len).gt(0).any())


def _randomisation(
    cfg: RootConfig, prompts: pd.DataFrame, main: CheckedRun, classifier: Any, pad_id: int
) -> tuple[pd.DataFrame, list[RunRecord]]:
    """The model-randomisation check on the first ``evaluation.randomisation_questions`` explained
    questions, explaining the options the attribution run explained; and the randomised head's records."""
    ev = cfg.evaluation
    record_ids = list(dict.fromkeys(main.frame["record_id"]))[: ev.randomisation_questions]
    rows = main.frame[main.frame["record_id"].isin(record_ids)]
    targets = {str(r): tuple(int(t) for t in g["target"]) for r, g in rows.groupby("record_id", sort=False)}
    max_positions = getattr(classifier.backbone.config, "max_position_embeddings", None)
    attribute = attribution_callable(prompts, cfg.attribution, record_ids, pad_id, max_positions, targets)
    cascade = cascade_names(classifier, "head", ev.randomisation_blocks)
    runs = randomised_runs(classifier, attribute, cascade, seed=ev.seed)
    trained = run_records(rows, prompts, main.directory)
    frame = randomisation_check(classifier, attribute, cascade, ev.seed, ev.ranking.topk, trained, runs)
    return frame, runs[0][1]


def _clue_study(
    cfg: RootConfig, prompts: pd.DataFrame, main: CheckedRun, details: dict[str, pd.DataFrame]
) -> dict[str, Any]:
    """Localisation over live positions beside its nulls (randomised head, input-only ranking), and the
    model-randomisation check; fills ``details`` and returns the summary's entries."""
    ev = cfg.evaluation
    has_clue = _has_clue(prompts, main)
    details["randomisation"] = pd.DataFrame()
    if not has_clue and ev.randomisation_questions == 0:
        details["localisation"] = localisation_table(main.frame, prompts)
        return {}
    classifier, tokenizer = load_classifier(
        artifact("classifier").at(cfg.paths),
        config_hash=train_run_hash(cfg),
        merge_lora=cfg.attribution.merge_lora,
    )
    head: list[RunRecord] = []
    pad_id = tokenizer.pad_token_id
    if ev.randomisation_questions:
        details["randomisation"], head = _randomisation(cfg, prompts, main, classifier, pad_id)
    if not has_clue:
        details["localisation"] = localisation_table(main.frame, prompts)
        return {}
    embedding = classifier.backbone.get_input_embeddings().weight.detach().double().cpu().numpy()
    refs = prepared_references(main.frame, prompts, cfg.attribution.reference_alignment, pad_id)
    live = live_by_question(prompts, refs, embedding)
    details["live_positions"] = pd.DataFrame(  # for the tables stage's per-target localisation
        {"record_id": list(live), "positions": [list(v) for v in live.values()]}
    )
    details["localisation"] = localisation_table(main.frame, prompts, live)
    rankings = {"trained": main.frame, "input_only": input_only_frame(main.frame, prompts, refs, embedding)}
    if head:
        rankings["randomised_head"] = records_frame(head)
    boot = (ev.bootstrap_resamples, ev.confidence, ev.bootstrap_method, ev.seed)
    details["localisation_nulls"], nulls = clue_nulls(rankings, prompts, live, *boot)
    return {"localisation": localisation_summary(details["localisation"], *boot), "localisation_nulls": nulls}


def run(cfg: RootConfig) -> dict[str, Any]:
    ev = cfg.evaluation
    details: dict[str, pd.DataFrame] = {}
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    main_dir = artifact("attributions").at(cfg.paths).parent
    main = CheckedRun("main", read_attributions(main_dir, attribution_fingerprint(cfg)), main_dir)
    checks = completeness_checks(main, ev.numerics, ev.ig)
    details["leave_one_out"], loo = leave_one_out_checks(main, prompts, ev.ranking)
    checks += loo
    for other in _other_runs(cfg):
        details[f"compare_{other.name}"], more = comparison_checks(
            main, other, prompts, ev.numerics, ev.ig, ev.ranking
        )
        checks += more
    endpoints = endpoint_checks(main.frame, ev.reference_shift_warning)
    details["endpoints"] = pd.DataFrame([e.to_dict() for e in endpoints])  # a diagnostic, not checks
    clue = _clue_study(cfg, prompts, main, details)
    run_hash, checks_table = stage_hash("checks", cfg), artifact("checks")
    for name, table in details.items():
        write_parquet(table, check_detail(name).at(cfg.paths), check_detail(name).provenance(run_hash))
    write_parquet(checks_frame(checks), checks_table.at(cfg.paths), checks_table.provenance(run_hash))
    summary = _summary(cfg, checks, details, clue, endpoints)
    write_json(summary, artifact("check_summary").at(cfg.paths))
    log.info("checks: %d of %d passed", summary["n_passed"], summary["n_checks"])
    for c in (c for c in checks if not c.passed):
        log.warning(
            "check failed: %s/%s = %.6g (threshold %s %g)", c.group, c.name, c.value, c.direction, c.threshold
        )
    reruns = [repeat_dir(cfg.paths, seed).name for seed in ev.repeat_seeds]
    return {**verdict_headline("checks", [c.passed for c in checks]), **rerun_headline(checks, reruns)}


def _other_runs(cfg: RootConfig) -> list[CheckedRun]:
    """The runs compared with the main one: each ``evaluation.comparison_runs`` entry, then the
    attribute_repeats stage's run of each repeat seed (each read against its own config)."""
    names = cfg.evaluation.comparison_runs
    others = [
        CheckedRun(n, read_attributions(comparison_run(cfg.paths, n)), comparison_run(cfg.paths, n))
        for n in names
    ]
    for seed in cfg.evaluation.repeat_seeds:
        repeat, fingerprint = repeat_dir(cfg.paths, seed), attribution_fingerprint(repeat_config(cfg, seed))
        others.append(CheckedRun(repeat.name, read_attributions(repeat, fingerprint), repeat))
    return others


def _summary(
    cfg: RootConfig, checks: list, details: dict[str, pd.DataFrame], clue: dict[str, Any], endpoints: list
) -> dict[str, Any]:
    """The checks' summary with the clue localisation (the clue study's, or the main run's with its
    bootstrap), the reference endpoints, the localisation's nulls and the randomisation's median agreement
    per randomised part."""
    ev = cfg.evaluation
    summary = checks_summary(checks)
    localisation = clue.get("localisation") or localisation_summary(
        details["localisation"], ev.bootstrap_resamples, ev.confidence, ev.bootstrap_method, ev.seed
    )
    summary["localisation"] = json_safe(localisation)
    if endpoints:
        summary["endpoints"] = json_safe(endpoints_summary(endpoints))
    if "localisation_nulls" in clue:
        summary["localisation_nulls"] = json_safe(clue["localisation_nulls"])
    if not details["randomisation"].empty:
        moved = details["randomisation"].groupby("randomised", sort=False)[["spearman", "relative_distance"]]
        summary["randomisation"] = json_safe(moved.median().to_dict(orient="index"))
    return summary
