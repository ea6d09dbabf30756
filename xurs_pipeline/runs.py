"""What the stages that train or attribute from saved artifacts run, built from the config: a
:class:`TrainingRun` (``train``, ``train_head``, ``train_swap``; run by
:func:`xurs_pipeline.train.from_artifacts.fit_into`) and an :class:`AttributionRun` (``attribute`` and
the stages that rerun it with a variation; run by
:func:`xurs_pipeline.attribution.from_artifacts.attribute_into`). Light on purpose (dataclasses, no
torch), like :mod:`xurs_pipeline.config`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.config import RootConfig, attribution_fingerprint, train_run_hash
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.models.config import ModelConfig
from xurs_pipeline.train.config import TrainConfig


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


def training_run(cfg: RootConfig, **options: Any) -> TrainingRun:
    """The training run ``cfg`` describes, from the backbone and prompts under ``cfg.paths``; ``options``:
    ``init_head_from``, ``relabel``, ``variant``."""
    backbone, prompts = artifact("backbone").at(cfg.paths), artifact("prompts").at(cfg.paths)
    hashes = data_config_hash(cfg.data), train_run_hash(cfg)
    return TrainingRun(backbone, prompts, *hashes, cfg.model, cfg.train, **options)


def attribution_run(cfg: RootConfig, classifier_dir: Path | None = None, **options: Any) -> AttributionRun:
    """The attribution run ``cfg`` describes, of the train stage's classifier (or the one in
    ``classifier_dir``) on the prompts under ``cfg.paths``; ``options``: ``modify``, ``variant``."""
    return AttributionRun(
        classifier_dir or artifact("classifier").at(cfg.paths), train_run_hash(cfg),
        artifact("prompts").at(cfg.paths), data_config_hash(cfg.data), cfg.attribution,
        attribution_fingerprint(cfg), attribution_fingerprint(cfg, per_question=True), **options,
    )  # fmt: skip
