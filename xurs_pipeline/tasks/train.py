"""Task ``train``: backbone + prepared prompts -> ``<artifacts>/train/classifier/`` and
``<artifacts>/train/train_metrics.json`` (per-epoch history, best epoch, feature-cache hits), the headline
metrics and the per-epoch curves (DVCLive).

Head-only runs cache the backbone's features under ``train.feature_cache_dir`` (outside DVC outputs, so
seeds and head variants reuse them). The training state is saved after every epoch under
``train.state_dir/<content key>`` (the run's config hash, the backbone's and prompts' SHA-256 and the code
version); ``train.resume=true`` continues an interrupted run of the same inputs from it. The global batch
(``train.global_batch``) is per-process batch x processes x accumulation steps, the last derived.
Several processes (``torchrun --nproc_per_node N -m stages train`` on CPUs or GPUs, ``accelerate launch
--multi_gpu --num_processes N -m stages train`` on GPUs) form one group (docs/scaling.md); the training
itself is :func:`xurs_pipeline.runs.training.fit_into`.
"""

from __future__ import annotations

from typing import Any

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.reporting.headline import train_headline
from xurs_pipeline.runs.training import fit_into, training_run
from xurs_pipeline.train.live import log_history


def run(cfg: RootConfig) -> dict[str, Any] | None:
    """The configured run; with ``train.head_first`` its head starts from the train_head stage's model."""
    t = cfg.train
    head_first = artifact("head_first").at(cfg.paths) / "classifier"
    init = str(head_first) if t.head_first else t.init_head_from or None
    summary = fit_into(training_run(cfg, init_head_from=init), artifact("classifier").at(cfg.paths).parent)
    if summary is None:
        return None
    log_history(summary["history"], artifact("train_live").at(cfg.paths))  # curves for dvc plots
    return train_headline(summary)
