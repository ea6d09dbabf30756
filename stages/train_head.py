"""DVC stage ``train_head``: with ``train.head_first`` (App. B.1: the LoRA runs begin with a trained output
layer), a head-only classifier on the frozen backbone -> ``<artifacts>/train_head/classifier/`` and
``train_metrics.json``; the ``train`` stage then starts its head from it. Without ``head_first`` it writes
only ``train_metrics.json`` saying it was skipped, so experiments that train once pay nothing.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from stages._common import log, run_stage
from stages.train import HEAD_FIRST_DIR, fit_into
from xurs_pipeline.config import RootConfig
from xurs_pipeline.io import write_json
from xurs_pipeline.train.config import head_first_settings


def body(cfg: RootConfig) -> None:
    out = Path(cfg.paths.artifacts) / HEAD_FIRST_DIR
    if not cfg.train.head_first:
        write_json({"skipped": "train.head_first is false: the train stage starts from no head-only run"},
                   out / "train_metrics.json")  # fmt: skip
        log.info("train_head: skipped (train.head_first is false)")
        return
    fit_into(dataclasses.replace(cfg, train=head_first_settings(cfg.train)), out, None)


if __name__ == "__main__":
    run_stage("train_head", body)
