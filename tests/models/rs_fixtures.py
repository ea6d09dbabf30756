"""Shared fixtures of the models/ and train/ tests: a tiny backbone directory and small labelled prompts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers

from xurs_pipeline.models.backbone import Backbone, load_backbone_dir, materialize_backbone
from xurs_pipeline.models.checkpoint import build_classifier
from xurs_pipeline.models.classifier import RandomSetClassifier
from xurs_pipeline.models.config import ModelConfig
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.data import LabelledSet
from xurs_pipeline.train.runner import Adaptation, TrainOutcome, train_classifier

transformers.utils.logging.disable_progress_bar()

OPTION_WORDS = ("fever", "rash", "cough", "pain")


@pytest.fixture(scope="session")
def tiny_backbone_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama backbone saved as the backbone stage saves it."""
    out = tmp_path_factory.mktemp("backbone") / "backbone"
    materialize_backbone(out, "tiny")
    return out


def fresh_classifier(
    backbone_dir: Path, seed: int = 0, **model: object
) -> tuple[RandomSetClassifier, Backbone]:
    """A new classifier (own copy of the backbone weights) on the tiny backbone directory, its head seeded
    with ``seed`` and described by the ``model.*`` keys ``model`` (the defaults of ``ModelConfig`` else)."""
    backbone = load_backbone_dir(backbone_dir)
    return build_classifier(backbone, ModelConfig(**model), seed), backbone  # type: ignore[arg-type]


def train_on(
    classifier: RandomSetClassifier,
    backbone: Backbone,
    sets: tuple[LabelledSet, LabelledSet],
    adaptation: Adaptation,
    settings: TrainConfig,
    cache: Path,
    **options: object,
) -> TrainOutcome:
    """``train_classifier`` of ``classifier`` on the (train, dev) ``sets`` under ``adaptation`` and
    ``settings``, padding with ``backbone``'s pad token, its features cached under ``cache``."""
    train, dev = sets
    pad = backbone.tokenizer.pad_token_id
    return train_classifier(
        classifier, train, dev, pad, adaptation, settings, feature_cache_dir=cache, **options
    )


def make_prompts(tokenizer: object, n: int, start: int = 0) -> LabelledSet:
    """n prompts of varying length whose answer is the index of the symptom word they mention."""
    texts, labels = [], []
    for i in range(start, start + n):
        label = i % 4
        texts.append(f"A patient {'aged ' * (i % 3)}{20 + i} has {OPTION_WORDS[label]}. Answer:")
        labels.append(label)
    ids = [tokenizer(t).input_ids for t in texts]  # type: ignore[operator]
    return LabelledSet(ids, torch.tensor(labels))


@pytest.fixture
def labelled_prompts(tiny_backbone_dir: Path) -> tuple[LabelledSet, LabelledSet]:
    """(train, dev): 24 and 8 prompts tokenised with the tiny tokenizer."""
    tokenizer = load_backbone_dir(tiny_backbone_dir).tokenizer
    return make_prompts(tokenizer, 24), make_prompts(tokenizer, 8, start=100)
