"""Training data: token or cached-feature datasets, their collation, a per-epoch seeded order, and the
forward wrappers that let one loop train a classifier from token ids or from cached features.

Batches are dicts ``{"inputs": {...}, "labels": (batch,), "target_masses": (batch, 15) | absent,
"index": (batch,) positions in the set}``; the model is called as ``model(**batch["inputs"])`` so that
accelerate/DDP wrapping sees a plain forward.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, Sampler

from xurs_pipeline.models.classifier import RandomSetClassifier, position_ids_from_mask
from xurs_pipeline.models.collate import pad_batch, pad_states
from xurs_pipeline.models.heads import ClassifierOutput, RandomSetHead

Batch = dict[str, Any]


@dataclass(frozen=True)
class LabelledSet:
    """Examples: ``inputs`` is a list of token-id lists, a features tensor (n, d), or a list of per-token
    state tensors (L_i, d) (partial tuning on cached states); labels (n,) in 0..3;
    target_masses (n, 15) or None; record_ids (n,) or empty (they name examples in error messages)."""

    inputs: Sequence[Sequence[int]] | torch.Tensor
    labels: torch.Tensor
    target_masses: torch.Tensor | None = None
    record_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.inputs)
        if n == 0:
            raise ValueError("LabelledSet: no examples")
        if self.labels.shape != (n,):
            raise ValueError(f"labels: expected shape ({n},), got {tuple(self.labels.shape)}")
        if self.target_masses is not None and self.target_masses.shape != (n, 15):
            raise ValueError(
                f"target_masses: expected shape ({n}, 15), got {tuple(self.target_masses.shape)}"
            )
        if self.record_ids and len(self.record_ids) != n:
            raise ValueError(f"record_ids: expected {n}, got {len(self.record_ids)}")

    def names(self, positions: Sequence[int]) -> list[str]:
        """Record ids at ``positions`` (positions themselves when the set has no ids)."""
        return [self.record_ids[i] if self.record_ids else f"#{i}" for i in positions]


class ExampleDataset(Dataset):
    """Indexable view of a :class:`LabelledSet`; items are dicts collated by :class:`Collator`."""

    def __init__(self, data: LabelledSet):
        self.data = data

    def __len__(self) -> int:
        return len(self.data.inputs)

    def __getitem__(self, i: int) -> dict[str, Any]:
        item: dict[str, Any] = {"inputs": self.data.inputs[i], "labels": self.data.labels[i], "index": i}
        if self.data.target_masses is not None:
            item["target_masses"] = self.data.target_masses[i]
        return item


@dataclass(frozen=True)
class Collator:
    """Stack features, or pad token ids (``pad_token_id``, ``padding_side``) or per-token states, into a
    :data:`Batch`."""

    pad_token_id: int = 0
    padding_side: str = "left"

    def __call__(self, items: list[dict[str, Any]]) -> Batch:
        first = items[0]["inputs"]
        if isinstance(first, torch.Tensor) and first.ndim == 2:  # states (L_i, d) of partial tuning
            states, mask = pad_states([it["inputs"] for it in items], self.padding_side)
            inputs = {"states": states, "attention_mask": mask}
        elif isinstance(first, torch.Tensor):
            inputs = {"features": torch.stack([it["inputs"] for it in items])}
        else:
            ids, mask = pad_batch([it["inputs"] for it in items], self.pad_token_id, self.padding_side)
            inputs = {"input_ids": ids, "attention_mask": mask}
        batch: Batch = {"inputs": inputs, "labels": torch.stack([it["labels"] for it in items]).long()}
        if "target_masses" in items[0]:
            batch["target_masses"] = torch.stack([it["target_masses"] for it in items]).float()
        if "index" in items[0]:
            batch["index"] = torch.tensor([it["index"] for it in items])
        return batch


class EpochSampler(Sampler[int]):
    """A random order that depends only on (seed, epoch): resuming at any epoch replays the same order."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        return iter(torch.randperm(self.n, generator=generator).tolist())

    def __len__(self) -> int:
        return self.n


MicroBatch = tuple[list[int], bool]  # positions in the set; False: a weight-0 stand-in (no examples left)


def step_batches(
    order: Sequence[int], global_batch: int, batch_size: int, processes: int, rank: int
) -> list[tuple[int, list[MicroBatch]]]:
    """One epoch's optimiser steps as process ``rank`` of ``processes`` runs them: per step, the number of
    real examples over all processes and this process's micro-batches (the accumulation steps).

    Step ``s`` takes the next ``global_batch`` positions of ``order`` (the last step fewer), cut into slots
    of ``batch_size``; micro-batch ``a`` of process ``p`` is slot ``a * processes + p``. Every process count
    thus covers the same examples per step (2 processes x batch 4 = 1 process x batch 8), and every process
    runs the same number of micro-batches: one whose slot is empty holds a weight-0 stand-in (the step's
    first example) so the processes meet at every gradient synchronisation.
    """
    accumulation = global_batch // (batch_size * processes)
    steps = []
    for start in range(0, len(order), global_batch):
        step = list(order[start : start + global_batch])
        micro: list[MicroBatch] = []
        for a in range(accumulation):
            slot = (a * processes + rank) * batch_size
            chunk = step[slot : slot + batch_size]
            micro.append((chunk, True) if chunk else ([step[0]], False))
        steps.append((len(step), micro))
    return steps


class TokenForward(nn.Module):
    """model(input_ids, attention_mask) -> ClassifierOutput, through the whole classifier."""

    def __init__(self, classifier: RandomSetClassifier):
        super().__init__()
        self.classifier = classifier

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> ClassifierOutput:
        c = self.classifier
        return c(c.embed(input_ids), attention_mask, position_ids_from_mask(attention_mask))


class FeatureForward(nn.Module):
    """model(features) -> ClassifierOutput, through the head only (cached backbone features)."""

    def __init__(self, head: RandomSetHead):
        super().__init__()
        self.head = head

    def forward(self, features: torch.Tensor) -> ClassifierOutput:
        return self.head(features)
