"""DVC stage ``train``: backbone + prepared prompts -> ``<artifacts>/train/classifier/`` and
``<artifacts>/train/train_metrics.json`` (per-epoch history, best epoch, feature-cache hits).

Head-only runs cache the backbone's features under ``train.feature_cache_dir`` (outside DVC outputs, so
seeds and head variants reuse them). The training state is saved after every epoch under
``train.state_dir/<config hash>``; ``train.resume=true`` continues an interrupted run from it.
Multi-GPU: ``accelerate launch -m stages.train`` runs the same code.
"""

from __future__ import annotations

from pathlib import Path

from accelerate import PartialState

from stages._common import log, run_stage
from xurs_pipeline.config import RootConfig, train_run_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import PROMPTS_FILE, read_prompts
from xurs_pipeline.io import ArtifactError, Provenance, write_json
from xurs_pipeline.models.adapters import LoraSpec
from xurs_pipeline.models.backbone import load_backbone_dir
from xurs_pipeline.models.checkpoint import build_classifier, save_classifier
from xurs_pipeline.train.config import accumulation_steps
from xurs_pipeline.train.loop import FitSettings
from xurs_pipeline.train.prompts import split_examples
from xurs_pipeline.train.runner import Adaptation, train_classifier

FIT_KEYS = tuple(k for k in FitSettings.__dataclass_fields__ if k != "grad_accum")  # derived below


HEAD_FIRST_DIR = "train_head"  # the train_head stage's output under paths.artifacts


def fit_into(cfg: RootConfig, out: Path, init_head_from: str | None) -> None:
    """Train ``cfg.train`` on the prepared prompts and save the classifier and its metrics under ``out``."""
    m, t = cfg.model, cfg.train
    artifacts = Path(cfg.paths.artifacts)
    processes = PartialState().num_processes
    run_hash = train_run_hash(cfg)
    try:
        grad_accum = accumulation_steps(t.global_batch, t.batch_size, processes)
        log.info("train: global batch %d = %d per process x %d processes x %d accumulation steps",
                 t.global_batch, t.batch_size, processes, grad_accum)  # fmt: skip
        backbone = load_backbone_dir(artifacts / "backbone")
        prompts = read_prompts(artifacts / "prepared" / PROMPTS_FILE, data_config_hash(cfg.data))
        vocab, mass15 = backbone.model.config.vocab_size, m.output_kind == "mass15"
        train = split_examples(
            prompts, "train", vocab, mass15, where=str(artifacts / "prepared" / PROMPTS_FILE)
        )
        dev = split_examples(prompts, "dev", vocab, mass15, where=str(artifacts / "prepared" / PROMPTS_FILE))
        classifier = build_classifier(
            backbone, m.output_kind, m.head, m.head_hidden, m.conversion, seed=t.seed,
            feature_layers=m.feature_layers, pooling=m.pooling, head_depth=m.head_depth,
            head_dropout=m.head_dropout,
        )  # fmt: skip
        outcome = train_classifier(
            classifier, train.data, dev.data, backbone.tokenizer.pad_token_id,
            Adaptation(t.adaptation, t.partial_layers, LoraSpec(t.lora_rank, t.lora_alpha, t.lora_dropout,
                                                                list(t.lora_targets))),
            FitSettings(**{k: getattr(t, k) for k in FIT_KEYS}, grad_accum=grad_accum),
            feature_cache_dir=t.feature_cache_dir, feature_batch_size=t.feature_batch_size,
            state_dir=Path(t.state_dir) / run_hash, resume=t.resume, init_head_from=init_head_from,
        )  # fmt: skip
    except (ArtifactError, ValueError, FileNotFoundError, FloatingPointError) as err:
        log.error("train: %s", err)
        raise SystemExit(1) from err
    if PartialState().is_main_process:
        save_classifier(classifier, out / "classifier", backbone.tokenizer, config_hash=run_hash)
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
        write_json(summary, out / "train_metrics.json", Provenance("train_metrics", 1, run_hash))
    best = outcome.fit
    log.info("train: best epoch %d of %d, dev score %.4f", best.best_epoch, best.epochs_run, best.best_score)


def body(cfg: RootConfig) -> None:
    """The configured run; with ``train.head_first`` its head starts from the train_head stage's model."""
    artifacts, t = Path(cfg.paths.artifacts), cfg.train
    init = str(artifacts / HEAD_FIRST_DIR / "classifier") if t.head_first else t.init_head_from or None
    fit_into(cfg, artifacts / "train", init)


if __name__ == "__main__":
    run_stage("train", body)
