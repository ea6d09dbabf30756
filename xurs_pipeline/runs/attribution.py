"""Attribute a saved classifier's questions from the pipeline's prepared prompts into a folder: what the
``attribute``, ``attribute_repeats``, ``attribute_targets`` and ``attribute_swap`` stages run (each builds
its :class:`AttributionRun` with :func:`attribution_run`).

Several processes (``torchrun --nproc_per_node N -m stages attribute``) split the questions; process 0
merges (:func:`xurs_pipeline.attribution.runner.run_attribution`).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.model import DTYPES, chosen_device, set_precision
from xurs_pipeline.attribution.runner import RunOutput, Shard, input_hashes, run_attribution, shard_seconds
from xurs_pipeline.config import RootConfig, attribution_fingerprint, train_run_hash
from xurs_pipeline.contracts import artifact, prompts_hash
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.io import Provenance, write_json
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.processes import process_group

log = logging.getLogger("xurs")


@dataclass(frozen=True)
class AttributionRun:
    """One attribution run from saved artifacts.

    classifier_dir / classifier_hash: the classifier and the provenance hash it must carry;
    prompts_path / prompts_hash: the prepared prompts and theirs; attribution: the settings;
    fingerprint / question_fingerprint: the merged table's key and a finished question's
    (``RunOutput``); modify: applied to the loaded classifier (the swap control's re-initialised heads),
    with ``variant`` keying its parts apart.
    """

    classifier_dir: Path
    classifier_hash: str
    prompts_path: Path
    prompts_hash: str
    attribution: AttributionConfig
    fingerprint: str
    question_fingerprint: str
    modify: Callable[[Any], None] | None = None
    variant: str = ""


def attribution_run(cfg: RootConfig, classifier_dir: Path | None = None, **options: Any) -> AttributionRun:
    """The attribution run ``cfg`` describes, of the train stage's classifier (or the one in
    ``classifier_dir``) on the prompts under ``cfg.paths``; ``options``: ``modify``, ``variant``."""
    return AttributionRun(
        classifier_dir or artifact("classifier").at(cfg.paths),
        train_run_hash(cfg),
        artifact("prompts").at(cfg.paths),
        prompts_hash(cfg.data),
        cfg.attribution,
        attribution_fingerprint(cfg),
        attribution_fingerprint(cfg, per_question=True),
        **options,
    )


def attribute_into(run: AttributionRun, out_dir: Path) -> dict | None:
    """Attribute ``run`` into ``out_dir`` (this process's shard); the merged metrics on the main process,
    else None."""
    at = run.attribution
    state = process_group(chosen_device(at.device).type == "cpu")  # one group of every launched process
    prompts = read_prompts(run.prompts_path, run.prompts_hash)
    classifier, tokenizer = load_classifier(
        run.classifier_dir, config_hash=run.classifier_hash, merge_lora=at.merge_lora
    )
    if run.modify is not None:
        run.modify(classifier)
    classifier.to(device=state.device)
    set_precision(classifier, DTYPES[at.precision])
    max_positions = getattr(classifier.backbone.config, "max_position_embeddings", None)
    inputs = input_hashes(run.classifier_dir, run.prompts_path) | (
        {"variant": run.variant} if run.variant else {}
    )
    metrics = run_attribution(
        classifier,
        prompts,
        at,
        pad_id=tokenizer.pad_token_id,
        max_positions=max_positions,
        out=RunOutput(out_dir, run.fingerprint, run.question_fingerprint, inputs),
        shard=Shard(state.process_index, state.num_processes, state.wait_for_everyone),
    )
    if metrics is not None:
        log.info("attribute: %s", metrics)
    return metrics


def attribute_variants(
    out: Path, runs: Mapping[str, AttributionRun], what: str, provenance: Provenance | None = None
) -> dict[str, float | None]:
    """Attribute each named run into ``out/<name>/`` (resume parts removed after the merge, so they are no
    DVC output) and write ``out/index.json`` with each run's seed, budget (EG: samples, IG: starting points,
    kronrod: starting intervals and evaluation budget) and target, under ``provenance`` where the index is
    an artifact a stage's readers check. Returns each run's seconds per question computed
    (:func:`~xurs_pipeline.attribution.runner.shard_seconds`, read before the parts go)."""
    seconds = {}
    for name, run in runs.items():
        log.info("%s: %s", what, name)
        attribute_into(run, out / name)
        seconds[name] = shard_seconds(out / name)
        shutil.rmtree(out / name / "parts", ignore_errors=True)
    index = {
        n: {"seed": r.attribution.seed, "target_fn": r.attribution.target_fn, **_budget(r.attribution)}
        for n, r in runs.items()
    }
    write_json({what: index}, out / "index.json", provenance)
    return seconds


def _budget(at: AttributionConfig) -> dict[str, int]:
    if at.method == "ig":
        return {"ig_points": at.ig_points}
    if at.method == "kronrod":
        return {"kronrod_intervals": at.kronrod_intervals, "kronrod_max_evals": at.kronrod_max_evals}
    if at.method == "certified":
        return {"certified_max_evals": at.certified_max_evals}
    return {"n_samples": at.n_samples} if at.method == "eg" else {}  # a token method draws no samples
