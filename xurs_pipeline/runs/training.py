"""Train a classifier from the pipeline's saved backbone and prepared prompts into a folder: what the
``train``, ``train_head`` and ``train_swap`` stages run (each builds its :class:`TrainingRun` with
:func:`training_run`).

Several processes (``torchrun --nproc_per_node N -m stages train``) form one group: each runs its share
of every optimiser step, gradients are averaged, dev metrics gathered, and the main process writes the
outputs once every process has finished (docs/scaling.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.config import RootConfig, train_run_hash
from xurs_pipeline.contracts import artifact, prompts_hash
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.fingerprint import ContentKey, code_version, sha256_file
from xurs_pipeline.io import write_json
from xurs_pipeline.models.adapters import LoraSpec
from xurs_pipeline.models.backbone import load_backbone_dir
from xurs_pipeline.models.checkpoint import build_classifier, save_classifier
from xurs_pipeline.models.config import ModelConfig
from xurs_pipeline.processes import process_group
from xurs_pipeline.train.config import TrainConfig, accumulation_steps
from xurs_pipeline.train.prompts import split_examples
from xurs_pipeline.train.runner import Adaptation, train_classifier
from xurs_pipeline.train.state import keyed_state_dir

log = logging.getLogger("xurs")


@dataclass(frozen=True)
class TrainingRun:
    """One training run from saved artifacts.

    backbone_dir: the backbone stage's folder; prompts_path / prompts_hash: the prepared prompts and the
    provenance hash they must carry; run_hash: the run's identity, stamped into the classifier and its
    metrics; model / train: the sections it trains with; init_head_from: a classifier folder whose head
    it starts from; relabel: prompts -> prompts (the swap control's model B, labels by cue 2), with
    ``variant`` keying its training state apart.
    """

    backbone_dir: Path
    prompts_path: Path
    prompts_hash: str
    run_hash: str
    model: ModelConfig
    train: TrainConfig
    init_head_from: str | None = None
    relabel: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    variant: str = ""


def training_run(cfg: RootConfig, **options: Any) -> TrainingRun:
    """The training run ``cfg`` describes, from the backbone and prompts under ``cfg.paths``; ``options``:
    ``init_head_from``, ``relabel``, ``variant``."""
    backbone, prompts = artifact("backbone").at(cfg.paths), artifact("prompts").at(cfg.paths)
    hashes = prompts_hash(cfg.data), train_run_hash(cfg)
    return TrainingRun(backbone, prompts, *hashes, cfg.model, cfg.train, **options)


def fit_into(run: TrainingRun, out: Path) -> dict[str, Any] | None:
    """Train ``run`` and save the classifier (``out/classifier``) and its metrics (``out/<metrics_name>``);
    returns the metrics on the main process (None elsewhere)."""
    state = process_group()  # every launched process in one group (gloo/NCCL), or a LaunchError
    batches = _batches(run.train, state.num_processes)
    backbone = load_backbone_dir(run.backbone_dir)
    prompts = read_prompts(run.prompts_path, run.prompts_hash)
    if run.relabel is not None:
        prompts = run.relabel(prompts)
    vocab, mass15 = backbone.model.config.vocab_size, run.model.output_kind == "mass15"
    where = str(run.prompts_path)
    train, dev = (split_examples(prompts, split, vocab, mass15, where=where) for split in ("train", "dev"))
    classifier = _new_classifier(backbone, run.model, run.train.seed)
    outcome = _train(run, classifier, backbone, train.data, dev.data)
    best = outcome.fit
    # best_epoch is the 0-based index the metrics keep; the log counts epochs from 1 as a reader does
    log.info(
        "train: best epoch %d of %d, dev score %.4f", best.best_epoch + 1, best.epochs_run, best.best_score
    )
    state.wait_for_everyone()  # the main process writes once, after every process has finished
    if not state.is_main_process:
        state.wait_for_everyone()  # a next stage in the same processes reads what the main process wrote
        return None
    summary = {
        **best.to_dict(),
        "feature_cache_hits": outcome.feature_cache_hits,
        "n_train": len(train.record_ids),
        "n_dev": len(dev.record_ids),
        "adaptation": run.train.adaptation,
        "init_head_from": run.init_head_from or "",
        **batches,
    }
    save_classifier(classifier, out / "classifier", backbone.tokenizer, config_hash=run.run_hash)
    metrics = artifact("train_metrics")
    write_json(summary, out / Path(metrics.path).name, metrics.provenance(run.run_hash))
    state.wait_for_everyone()
    return summary


def _batches(t: TrainConfig, processes: int) -> dict[str, int]:
    """The global batch as ``batch_size`` per process x processes x accumulation steps (logged)."""
    grad_accum = accumulation_steps(t.global_batch, t.batch_size, processes)
    log.info(
        "train: global batch %d = %d per process x %d processes x %d accumulation steps",
        t.global_batch,
        t.batch_size,
        processes,
        grad_accum,
    )
    return {
        "global_batch": t.global_batch,
        "batch_size": t.batch_size,
        "processes": processes,
        "grad_accum": grad_accum,
    }


def _new_classifier(backbone: Any, m: ModelConfig, seed: int) -> Any:
    """The untrained classifier ``model.*`` describes on ``backbone`` (head initialised with ``seed``)."""
    return build_classifier(backbone, m, seed)


def _train(run: TrainingRun, classifier: Any, backbone: Any, train: Any, dev: Any) -> Any:
    """``train_classifier`` under ``train.*``, resuming from the state kept under the run's content key
    (its config, backbone weights, prompts, code and variant)."""
    t = run.train
    parts = {
        "config": run.run_hash,
        "backbone": backbone.info["weights_sha256"],
        "prompts": sha256_file(run.prompts_path),
        "code": code_version(),
    }
    key = ContentKey({**parts, **({"variant": run.variant} if run.variant else {})})
    lora = LoraSpec(t.lora_rank, t.lora_alpha, t.lora_dropout, list(t.lora_targets))
    return train_classifier(
        classifier,
        train,
        dev,
        backbone.tokenizer.pad_token_id,
        Adaptation(t.adaptation, t.partial_layers, lora),
        t,
        feature_cache_dir=t.feature_cache_dir,
        feature_batch_size=t.feature_batch_size,
        state_dir=keyed_state_dir(t.state_dir, key, t.resume),
        resume=t.resume,
        init_head_from=run.init_head_from,
    )
