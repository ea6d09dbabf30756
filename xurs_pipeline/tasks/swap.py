"""Task ``swap``: the two-cue swap control's study (``evaluation/swap/``) -> ``<artifacts>/swap/``:

- ``study/per_question.parquet``: per (ranking, role, probe) of the models whose labels name a cue (A, B)
  whether the learned cue's best token outranks the other cue, the learned cue's and cue 1's share of the
  two cues' magnitude (``swap/measures.py``); rankings ``trained`` (the ``attribute`` stage's model A and
  ``attribute_swap``'s model B), ``randomised`` (their heads re-initialised) and ``input_only``
  (``nulls.input_only_scores`` against the same references);
- ``study/behaviour.parquet``: per (role, probe) the label's width on the probe and on its four text edits,
  each cue's behavioural effect, which cue the model depends on and by what margin (``swap/behaviour.py``);
- ``study/faithfulness.parquet``, the ledger: per (method, yardstick, role, probe) whether the method ranks
  first the cue the yardstick names, on a clear probe, where the behaviour departs from the training rule,
  the probe's cue order, and the reading's cue share and cost (``swap/faithfulness.py``, the readings
  through ``attribution/methods/``; baselines ``training_rule`` and ``constant`` beside them);
- ``study/summary.json``: each ranking's study, each method's description read off the ledger
  (``swap/agreement.py``), its faithfulness per yardstick,
  model and order with the paired tests and the yardsticks' validation, how often each model behaves as
  trained, each role's accuracy by which cue resolves the question, and the runs' completeness residuals;
- ``headline.json``: swap_accuracy, swap_ci_low, swap_ci_high, randomised_swap_accuracy, share_difference,
  share_ci_low, share_ci_high, R_median and R_max (Eq. 9, over every trained model's rows);
- ``methods.json`` (a DVC metric): per method the training-rule swap accuracy and the behavioural agreement,
  each with its lower bound, the plan's verdict and every cell's clear agreement; per model the share of
  probes where it behaves as trained; per yardstick whether it judges and its known-ranking check
  (``reporting/swap_metrics.py``).
"""

from __future__ import annotations

from typing import Any

from xurs_pipeline.attribution.model import chosen_device
from xurs_pipeline.config import RootConfig, train_run_hash
from xurs_pipeline.contracts import artifact, swap_summary
from xurs_pipeline.data.dataset import data_config_hash, load_records
from xurs_pipeline.evaluation.artifacts import read_attributions, read_prompts
from xurs_pipeline.evaluation.swap.roles import FIRST_ROLE, ROLES, skipped_reason, study_runs
from xurs_pipeline.evaluation.swap.study import StudyInputs, StudyResult, run_study
from xurs_pipeline.evaluation.verdicts import json_safe
from xurs_pipeline.io import Provenance, write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.reporting.swap_metrics import method_metrics
from xurs_pipeline.tasks.runner import log


def run(cfg: RootConfig) -> dict[str, Any] | None:
    reason = skipped_reason(cfg.data.source)
    if reason is not None:
        write_json({"skipped": reason}, swap_summary(cfg.paths))
        write_json({}, artifact("swap_methods").at(cfg.paths))
        log.info("swap: skipped (%s)", reason)
        return {}
    result = run_study(study_inputs(cfg))
    log.info("swap: %s", {k: v["swap_accuracy"] for k, v in result.summary["studies"].items()})
    _write(cfg, result)
    return result.headline


def study_inputs(cfg: RootConfig) -> StudyInputs:
    """What the study reads: the prompts, every run's attributions, the probes' records, both models."""
    names = study_runs(cfg.evaluation.swap_randomise)
    runs = {name: read_attributions(_run_dir(cfg, name)) for name in names}
    probes = set(runs[FIRST_ROLE]["record_id"])
    return StudyInputs(
        cfg,
        read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data)),
        runs,
        [r for r in load_records(cfg.data) if r.record_id in probes],
        _models(cfg),
    )


def _run_dir(cfg: RootConfig, name: str):
    """Model A's trained run is the attribute stage's; every other run is attribute_swap's."""
    if name == FIRST_ROLE:
        return artifact("attributions").at(cfg.paths).parent
    return artifact("swap_attributions").at(cfg.paths) / name


def _models(cfg: RootConfig) -> dict[str, Any]:
    """Every model (``roles.ROLES``) as (classifier, tokenizer) on ``evaluation.device`` (the edits' and
    methods' passes)."""
    device, models = chosen_device(cfg.evaluation.device), {}
    for name, role in ROLES.items():
        classifier, tokenizer = load_classifier(
            role.classifier_dir(cfg.paths), config_hash=train_run_hash(cfg)
        )
        models[name] = (classifier.to(device).eval(), tokenizer)
    return models


def _write(cfg: RootConfig, result: StudyResult) -> None:
    study, run_hash = artifact("swap_study").at(cfg.paths), train_run_hash(cfg)
    write_parquet(result.scores, study / "per_question.parquet", Provenance("swap_scores", 1, run_hash))
    write_parquet(result.behaviour, study / "behaviour.parquet", Provenance("swap_behaviour", 1, run_hash))
    write_parquet(
        result.faithfulness, study / "faithfulness.parquet", Provenance("swap_faithfulness", 2, run_hash)
    )
    write_json(json_safe(result.summary), swap_summary(cfg.paths))
    write_json(json_safe(method_metrics(result.summary)), artifact("swap_methods").at(cfg.paths))
