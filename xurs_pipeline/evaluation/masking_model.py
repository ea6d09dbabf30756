"""The classifier zero-masking (Eq. 8) runs on, from the config, shared by the stages that zero-mask
(``mask_eval``, ``attribute_compare``): the train stage's classifier as the attributions explain it
(``attribution.merge_lora``), on ``evaluation.device`` in ``evaluation.precision``, with the protocol of
``evaluation.*`` (random controls, top-k curve, seed, batches, shared prefix)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.model import DTYPES, chosen_device, set_precision
from xurs_pipeline.config import RootConfig, train_run_hash
from xurs_pipeline.contracts import artifact
from xurs_pipeline.evaluation.mask_eval import mask_run
from xurs_pipeline.evaluation.masking import MaskingEffect, MaskingSpec
from xurs_pipeline.models.checkpoint import load_classifier


@dataclass(frozen=True)
class MaskingModel:
    """A loaded classifier (``RandomSetClassifier``), its device and the masking protocol."""

    classifier: Any
    device: torch.device
    spec: MaskingSpec

    def mask(self, prompts: pd.DataFrame, rows: pd.DataFrame, by: str = "target_fn") -> list[MaskingEffect]:
        """:func:`~xurs_pipeline.evaluation.mask_eval.mask_run` of ``rows`` (rankings named by ``by``)."""
        classifier = self.classifier
        return mask_run(
            classifier_mass_fn(classifier), classifier.embed, prompts, rows, self.spec, self.device, by
        )


def masking_model(cfg: RootConfig) -> MaskingModel:
    """The classifier and protocol ``cfg`` zero-masks with."""
    ev = cfg.evaluation
    device = chosen_device(ev.device)
    classifier, _ = load_classifier(
        artifact("classifier").at(cfg.paths),
        config_hash=train_run_hash(cfg),
        merge_lora=cfg.attribution.merge_lora,
    )
    classifier.to(device)
    set_precision(classifier, DTYPES[ev.precision])
    spec = MaskingSpec(ev.n_random, ev.top_k_max, ev.seed, ev.mask_batch_size, ev.mask_reuse_prefix)
    return MaskingModel(classifier, device, spec)
