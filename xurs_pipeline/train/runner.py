"""Train a ``RandomSetClassifier`` in one adaptation mode: warm start, adaptation, then the loop.

Head-only training runs the frozen backbone once per prompt set (every layer's pooled states cached on
disk, see ``models.feature_cache``) and trains the head on the classifier's features read from them.
Partial training with the default features runs the frozen lower blocks once per prompt set (every
position's state entering the first tuned block cached on disk, see ``models.block_cache``) and trains the
top blocks and head from those states; LoRA (and partial with other features) runs the whole classifier
on token ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate import PartialState
from accelerate.utils import set_seed
from torch import nn

from xurs_pipeline.errors import NonFiniteValuesError
from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation, trainable_groups
from xurs_pipeline.models.block_cache import TopBlocks, cached_lower_states, supports_block_cache
from xurs_pipeline.models.checkpoint import warm_start_head
from xurs_pipeline.models.classifier import RandomSetClassifier
from xurs_pipeline.models.feature_cache import cached_features
from xurs_pipeline.processes import process_group
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.data import Collator, FeatureForward, LabelledSet, TokenForward
from xurs_pipeline.train.loop import EpochRecord, FitResult, Saving, Trainee, fit


@dataclass(frozen=True)
class Adaptation:
    """``train.adaptation`` and its settings."""

    mode: str = "head_only"
    partial_layers: int = 2
    lora: LoraSpec = field(default_factory=LoraSpec)


@dataclass
class TrainOutcome:
    fit: FitResult
    feature_cache_hits: list[bool]


def features_for(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    cache_dir: str | Path,
    batch_size: int,
) -> tuple[torch.Tensor, bool]:
    """The classifier's features (n, D) from the cache; under several processes the main one computes
    them first."""
    state = PartialState()
    classifier.to(state.device)
    with state.main_process_first():
        return cached_features(classifier, input_ids, pad_token_id, cache_dir, batch_size, state.device)


def check_finite_features(features: torch.Tensor, data: LabelledSet) -> None:
    """Raise NonFiniteValuesError naming the prompts whose backbone features (n, D) hold NaN or inf."""
    finite = torch.isfinite(features).all(-1)  # (n,)
    if bool(finite.all()):
        return
    bad = data.names((~finite).nonzero().flatten().tolist())
    raise NonFiniteValuesError(
        f"backbone features of {len(bad)} of {len(finite)} prompts are not finite (e.g. {bad[:10]}); "
        "nothing was trained. Usual causes: float16 overflow (set model.dtype=bfloat16 or float32) or "
        "NaN backbone weights."
    )


def _cached_sets(
    classifier: RandomSetClassifier,
    sets: tuple[LabelledSet, LabelledSet],
    adaptation: Adaptation,
    pad_token_id: int,
    cache: tuple[str | Path, int],
) -> tuple[tuple[LabelledSet, LabelledSet], list[bool]]:
    """``sets`` (train, dev) with token ids replaced by what the adaptation trains from: the head's
    features (head-only) or the states entering the first tuned block (partial); and the cache hits.
    ``cache``: (feature cache directory, feature batch size)."""
    out, hits, state = [], [], PartialState()
    for data in sets:
        if adaptation.mode == "head_only":
            inputs, hit = features_for(classifier, data.inputs, pad_token_id, *cache)
            check_finite_features(inputs, data)
        else:
            classifier.to(state.device)
            with state.main_process_first():
                inputs, hit = cached_lower_states(
                    classifier, data.inputs, adaptation.partial_layers, pad_token_id, *cache
                )
        hits.append(hit)
        out.append(LabelledSet(inputs, data.labels, data.target_masses, data.record_ids))
    return (out[0], out[1]), hits


def _trainee(classifier: RandomSetClassifier, adaptation: Adaptation, pad_token_id: int) -> Trainee:
    """The module ``fit`` trains for ``adaptation``: the head on cached features (head-only), the top
    blocks on cached states (partial, where the block cache supports the classifier), else the whole
    classifier on token ids."""
    if adaptation.mode == "head_only":
        model: nn.Module = FeatureForward(classifier.head)
    elif uses_block_cache(classifier, adaptation):
        model = TopBlocks(classifier, adaptation.partial_layers)
    else:
        model = TokenForward(classifier)
    collator = Collator(pad_token_id, classifier.padding_side)
    return Trainee(model, trainable_groups(classifier), classifier.output_kind, collator)


def uses_block_cache(classifier: RandomSetClassifier, adaptation: Adaptation) -> bool:
    return adaptation.mode == "partial" and supports_block_cache(classifier)


def train_classifier(
    classifier: RandomSetClassifier,
    train: LabelledSet,
    dev: LabelledSet,
    pad_token_id: int,
    adaptation: Adaptation,
    settings: TrainConfig,
    feature_cache_dir: str | Path = ".cache/xurs/features",
    feature_batch_size: int = 8,
    state_dir: str | Path | None = None,
    resume: bool = False,
    init_head_from: str | Path | None = None,
    on_epoch_end: Callable[[EpochRecord], None] | None = None,
) -> TrainOutcome:
    """Train ``classifier`` in place (``train``/``dev`` hold token-id lists) and return the loop's result.
    Under a multi-process launch the processes form one group first (or raise LaunchError)."""
    process_group()
    if init_head_from:
        warm_start_head(classifier, init_head_from)
    set_seed(settings.seed)  # LoRA's initial A matrices come from the global RNG
    apply_adaptation(classifier, adaptation.mode, adaptation.partial_layers, adaptation.lora)
    hits: list[bool] = []
    if adaptation.mode == "head_only" or uses_block_cache(classifier, adaptation):
        cache = (feature_cache_dir, feature_batch_size)
        (train, dev), hits = _cached_sets(classifier, (train, dev), adaptation, pad_token_id, cache)
    trainee = _trainee(classifier, adaptation, pad_token_id)
    result = fit(trainee, train, dev, settings, Saving(state_dir, resume, on_epoch_end))
    classifier.eval()
    return TrainOutcome(fit=result, feature_cache_hits=hits)
