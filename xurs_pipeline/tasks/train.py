"""Task ``train``: backbone + prepared prompts -> ``<artifacts>/train/classifier/`` and
``<artifacts>/train/train_metrics.json`` (per-epoch history, best epoch, feature-cache hits), the headline
metrics and the per-epoch curves (DVCLive).

Head-only runs cache the backbone's features under ``train.feature_cache_dir`` (outside DVC outputs, so
seeds and head variants reuse them). The training state is saved after every epoch under
``train.state_dir/<content key>`` (the run's config hash, the backbone's and prompts' SHA-256 and the code
version); ``train.resume=true`` continues an interrupted run of the same inputs from it. The global batch
(``train.global_batch``) is per-process batch x processes x accumulation steps, the last derived.
Several processes (``torchrun --nproc_per_node N -m stages.train`` on CPUs or GPUs, ``accelerate launch
--multi_gpu --num_processes N -m stages.train`` on GPUs) form one group: each runs its share of every
optimiser step, gradients are averaged, dev metrics gathered, and the main process writes the outputs
once every process has finished (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.attribution.inputs import check_record_ids
from xurs_pipeline.config import RootConfig, train_run_hash
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.fingerprint import ContentKey, code_version, sha256_file
from xurs_pipeline.io import write_json
from xurs_pipeline.models.adapters import LoraSpec
from xurs_pipeline.models.backbone import load_backbone_dir
from xurs_pipeline.models.checkpoint import build_classifier, save_classifier
from xurs_pipeline.processes import process_group
from xurs_pipeline.reporting.headline import train_headline
from xurs_pipeline.tasks.runner import log
from xurs_pipeline.train.config import accumulation_steps
from xurs_pipeline.train.live import log_history
from xurs_pipeline.train.prompts import split_examples
from xurs_pipeline.train.runner import Adaptation, train_classifier
from xurs_pipeline.train.state import keyed_state_dir


def fit_into(
    cfg: RootConfig,
    out: Path,
    init_head_from: str | None,
    relabel: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    variant: str = "",
) -> dict[str, Any] | None:
    """Train ``cfg.train`` on the prepared prompts (``relabel``-ed, a ``variant`` of the run that keys its
    training state apart: the swap control's model B) and save the classifier and its metrics under
    ``out``; returns the metrics on the main process (None elsewhere)."""
    m, t = cfg.model, cfg.train
    prompts_path = artifact("prompts").at(cfg.paths)
    state = process_group()  # every launched process in one group (gloo/NCCL), or a LaunchError
    processes = state.num_processes
    run_hash = train_run_hash(cfg)
    grad_accum = accumulation_steps(t.global_batch, t.batch_size, processes)
    log.info("train: global batch %d = %d per process x %d processes x %d accumulation steps",
             t.global_batch, t.batch_size, processes, grad_accum)  # fmt: skip
    backbone = load_backbone_dir(artifact("backbone").at(cfg.paths))
    prompts = read_prompts(prompts_path, data_config_hash(cfg.data))
    check_record_ids(prompts, cfg.attribution.record_ids)  # before hours of training, not after
    if relabel is not None:
        prompts = relabel(prompts)
    key = ContentKey({"config": run_hash, "backbone": backbone.info["weights_sha256"],
                      "prompts": sha256_file(prompts_path), "code": code_version(),
                      **({"variant": variant} if variant else {})})  # fmt: skip
    vocab, mass15 = backbone.model.config.vocab_size, m.output_kind == "mass15"
    train = split_examples(prompts, "train", vocab, mass15, where=str(prompts_path))
    dev = split_examples(prompts, "dev", vocab, mass15, where=str(prompts_path))
    classifier = build_classifier(
        backbone, m.output_kind, m.head, m.head_hidden, m.conversion, seed=t.seed,
        feature_layers=m.feature_layers, pooling=m.pooling, head_depth=m.head_depth,
        head_dropout=m.head_dropout,
    )  # fmt: skip
    outcome = train_classifier(
        classifier, train.data, dev.data, backbone.tokenizer.pad_token_id,
        Adaptation(t.adaptation, t.partial_layers, LoraSpec(t.lora_rank, t.lora_alpha, t.lora_dropout,
                                                            list(t.lora_targets))),
        t,
        feature_cache_dir=t.feature_cache_dir, feature_batch_size=t.feature_batch_size,
        state_dir=keyed_state_dir(t.state_dir, key, t.resume), resume=t.resume,
        init_head_from=init_head_from,
    )  # fmt: skip
    best = outcome.fit
    log.info("train: best epoch %d of %d, dev score %.4f", best.best_epoch, best.epochs_run, best.best_score)
    state.wait_for_everyone()  # the main process writes once, after every process has finished
    if state.is_main_process:
        summary = {
            **outcome.fit.to_dict(),
            "feature_cache_hits": outcome.feature_cache_hits,
            "n_train": len(train.record_ids),
            "n_dev": len(dev.record_ids),
            "adaptation": t.adaptation,
            "init_head_from": init_head_from or "",
            "global_batch": t.global_batch,
            "batch_size": t.batch_size,
            "processes": processes,
            "grad_accum": grad_accum,
        }
        save_classifier(classifier, out / "classifier", backbone.tokenizer, config_hash=run_hash)
        metrics = artifact("train_metrics")
        write_json(summary, out / Path(metrics.path).name, metrics.provenance(run_hash))
    state.wait_for_everyone()  # a next stage in the same processes reads what the main process wrote
    return summary if state.is_main_process else None


def run(cfg: RootConfig) -> dict[str, Any] | None:
    """The configured run; with ``train.head_first`` its head starts from the train_head stage's model."""
    t = cfg.train
    head_first = artifact("head_first").at(cfg.paths) / "classifier"
    init = str(head_first) if t.head_first else t.init_head_from or None
    summary = fit_into(cfg, artifact("classifier").at(cfg.paths).parent, init)
    if summary is None:
        return None
    log_history(summary["history"], artifact("train_live").at(cfg.paths))  # curves for dvc plots
    return train_headline(summary)
