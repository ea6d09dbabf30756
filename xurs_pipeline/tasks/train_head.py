"""Task ``train_head``: with ``train.head_first`` (App. B.1: the LoRA runs begin with a trained output
layer), a head-only classifier on the frozen backbone -> ``<artifacts>/train_head/classifier/`` and
``train_metrics.json``; the ``train`` stage then starts its head from it. Without ``head_first`` it writes
only ``train_metrics.json`` saying it was skipped, so experiments that train once pay nothing.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.io import write_json
from xurs_pipeline.processes import process_group
from xurs_pipeline.runs.training import fit_into, training_run
from xurs_pipeline.tasks.runner import log
from xurs_pipeline.train.config import head_first_settings


def run(cfg: RootConfig) -> None:
    out = artifact("head_first").at(cfg.paths)
    state = process_group()
    if not cfg.train.head_first:
        if state.is_main_process:
            write_json(
                {"skipped": "train.head_first is false: the train stage starts from no head-only run"},
                out / Path(artifact("train_metrics").path).name,
            )
        log.info("train_head: skipped (train.head_first is false)")
        return
    head_only = dataclasses.replace(cfg, train=head_first_settings(cfg.train, state.num_processes))
    fit_into(training_run(head_only), out)
