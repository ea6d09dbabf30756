"""The accelerate training loop (Sec. 5.1, App. B.1, Table 4), laid out as accelerate's guides write one.

AdamW with separate learning rates for the head and the adapter (no weight decay on biases and norm
weights), linear warmup then linear decay, gradient accumulation, gradient-norm clipping, evaluation on
the dev set after every epoch, early stopping with patience, and the best epoch by dev answer NLL
restored at the end. :func:`fit` prepares a :class:`PreparedRun`, then runs one function per epoch
(:func:`_epoch`: train, evaluate, keep the best) and per optimiser step (:func:`_train_step`), carrying
an :class:`EpochState`; with ``Saving.state_dir`` the state is saved after each epoch and
``Saving.resume`` continues from it, ending exactly where an uninterrupted run ends (``train.state``).

Several processes (torchrun / ``accelerate launch --multi_gpu``, DDP through accelerate) run the same
code, and each optimiser step is the mean over the same examples whatever the process count. From
accelerate: ``prepare`` (DDP, mixed precision, the dev loader), ``backward``, ``no_sync`` before the last
micro-batch of a step, ``clip_grad_norm_``, ``reduce`` and ``gather_for_metrics`` (dev metrics over the
processes), ``send_to_device``. Not from accelerate: the training batches and their accumulation
(:func:`~xurs_pipeline.train.data.step_batches`), because accelerate's own way does not give the same
training at another process count. Measured (``python bench/accelerate_accumulation.py``: one epoch of
a head on 10 examples, global batch 8, on 1 and on 2 CPU processes; largest weight difference):

| way | examples per epoch, 1 / 2 processes | weights, 2 vs 1 process |
|---|---|---|
| accelerate's guide (prepared loader, ``accumulate``, mean loss) | 10 / 16 | 5.0e-02 |
| the guide's recipe for steps of unequal size (loss scaled by the gathered count) | 10 / 16 | 1.2e-01 |
| this loop (``step_batches``) | 10 / 10 | 0.0e+00 |

The prepared loader's ``even_batches`` makes every process run as many batches as the busiest one by
repeating examples from the start of the epoch, so two processes train on 16 examples where one trains
on 10; without it the processes run different numbers of micro-batches and meet at different
synchronisations. ``step_batches`` gives every process the same number of micro-batches (a weight-0
stand-in where its slot is empty) and each step the mean over its real examples. The scheduler is not
prepared either: accelerate's wrapper steps it once per process for each optimiser step.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator, PartialState
from accelerate.state import AcceleratorState
from accelerate.utils import send_to_device, set_seed
from torch import nn
from torch.utils.data import DataLoader
from transformers import get_linear_schedule_with_warmup

from xurs_pipeline.credal import pignistic
from xurs_pipeline.errors import NonFiniteValuesError
from xurs_pipeline.models.losses import LossParts, rs_loss
from xurs_pipeline.train.config import TrainConfig, accumulation_steps
from xurs_pipeline.train.data import (
    Collator,
    EpochSampler,
    ExampleDataset,
    LabelledSet,
    MicroBatch,
    step_batches,
)
from xurs_pipeline.train.state import has_state, load_state, load_trainable, save_state, trainable_state

log = logging.getLogger(__name__)

# The autocast dtype of each train.mixed_precision (None: the model's own dtype).
AUTOCAST_DTYPES: dict[str, torch.dtype | None] = {"no": None, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class EpochRecord:
    epoch: int
    train_loss: float
    dev_loss: float
    dev_answer_nll: float
    dev_accuracy: float
    lr_head: float


@dataclass
class FitResult:
    """A fit's outcome: ``best_epoch`` the 0-based index of the epoch whose weights it keeps (``history``
    position), ``epochs_run`` how many ran."""

    best_epoch: int
    best_score: float
    epochs_run: int
    stopped_early: bool
    resumed_from_epoch: int | None
    optimizer_steps: int
    history: list[EpochRecord] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _nonfinite(
    what: str,
    epoch: int,
    step: int,
    batch: dict[str, Any],
    data: LabelledSet,
    rows: torch.Tensor | None = None,
) -> NonFiniteValuesError:
    """The error for a non-finite value in a training step, naming the records: ``rows`` (b,) bool of the
    batch, or the whole batch."""
    index = batch["index"] if rows is None else batch["index"][rows.to(batch["index"].device)]
    names = data.names(index.tolist()) if "index" in batch else []
    scope = "the batch of records" if rows is None else "records"
    return NonFiniteValuesError(
        f"epoch {epoch + 1}, optimizer step {step}: {what} for {scope} {names[:16]}; stopped before the "
        "weights took it (the last saved state is intact). Lower train.lr_head / train.lr_adapter, use "
        "mixed_precision 'no' or model.dtype float32, or check these records."
    )


def _param_groups(groups: dict[str, list[nn.Parameter]], s: TrainConfig) -> list[dict[str, Any]]:
    lrs = {"head": s.lr_head, "adapter": s.lr_adapter}
    out = []
    for name, params in groups.items():
        for decay in (True, False):
            chosen = [p for p in params if (p.ndim >= 2) == decay]
            if chosen:
                out.append(
                    {"params": chosen, "lr": lrs[name], "weight_decay": s.weight_decay if decay else 0.0}
                )
    if not out:
        raise ValueError("nothing to train: no parameter requires gradients")
    return out


def _example_losses(parts: LossParts, output_kind: str, w: float) -> torch.Tensor:
    """Per-example training loss (b,) whose batch mean is ``rs_loss(...).total``."""
    return parts.set_term if output_kind == "mass15" else parts.answer_nll + w * parts.set_term


@dataclass(frozen=True)
class Trainee:
    """What :func:`fit` trains: the forward module (``TokenForward``, ``FeatureForward``, ``TopBlocks``),
    its trainable parameters by learning-rate group (``head``, ``adapter``), the classifier's output kind
    and the collator of its inputs (the tokenizer's pad id and padding side)."""

    model: nn.Module
    groups: dict[str, list[nn.Parameter]]
    output_kind: str
    collator: Collator = field(default_factory=Collator)


@dataclass(frozen=True)
class Saving:
    """Per-epoch training state: saved under ``state_dir`` after each epoch, continued from with ``resume``;
    ``on_epoch_end`` is called after the state is saved (tests use it to simulate an interruption)."""

    state_dir: str | Path | None = None
    resume: bool = False
    on_epoch_end: Callable[[EpochRecord], None] | None = None


@dataclass
class EpochState:
    """What the loop carries from one epoch to the next: the last finished epoch, the best dev score, its
    epoch and weights, epochs without improvement, optimiser steps and the history. All but ``best`` is
    the ``progress.json`` of the saved training state."""

    epoch: int = -1
    best_score: float = math.inf
    best_epoch: int = -1
    bad_epochs: int = 0
    history: list[EpochRecord] = field(default_factory=list)
    steps: int = 0
    best: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    def progress(self) -> dict[str, Any]:
        """The JSON part (``progress.json``)."""
        history = [asdict(h) for h in self.history]
        return {
            "epoch": self.epoch,
            "best_score": self.best_score,
            "best_epoch": self.best_epoch,
            "bad_epochs": self.bad_epochs,
            "history": history,
            "steps": self.steps,
        }

    @classmethod
    def restored(cls, best: dict[str, torch.Tensor], progress: dict[str, Any]) -> EpochState:
        history = [EpochRecord(**h) for h in progress["history"]]
        return cls(**{**progress, "history": history, "best": best})

    def stopped(self, patience: int) -> bool:
        return patience > 0 and self.bad_epochs >= patience


@dataclass
class PreparedRun:
    """One run's prepared objects (``accelerator.prepare``: model, optimizer, dev loader) and what every
    step reads. The scheduler is not prepared: accelerate's wrapper steps it once per process for each
    optimiser step."""

    accelerator: Accelerator
    trainee: Trainee
    optimizer: Any
    scheduler: Any
    dev_loader: DataLoader
    train: LabelledSet
    settings: TrainConfig

    @property
    def model(self) -> nn.Module:
        return self.trainee.model

    @property
    def computed_in(self) -> torch.dtype | None:
        """The autocast dtype of mixed precision (accelerate returns float32 outputs of autocast)."""
        return AUTOCAST_DTYPES[self.settings.mixed_precision]

    def losses(self, out: Any, batch: dict[str, Any]) -> tuple[LossParts, torch.Tensor]:
        """The loss parts of the model's output ``out`` on ``batch`` and per-example training losses (b,)."""
        s, kind = self.settings, self.trainee.output_kind
        parts = rs_loss(
            out, batch["labels"], kind, s.set_loss_weight, batch.get("target_masses"), self.computed_in
        )
        return parts, _example_losses(parts, kind, s.set_loss_weight)


def _accelerator(s: TrainConfig) -> Accelerator:
    """An Accelerator under ``s.mixed_precision``, after checking that ``global_batch`` splits over the
    processes (naming the key if not).

    accelerate keeps one precision per process and refuses another ("AcceleratorState has already been
    initialized and cannot be changed"); ``run_pipeline`` trains ``train_head`` in float32 and then
    ``train`` under bf16 in one process, and so do notebooks. accelerate has no public way to change it,
    so the private ``AcceleratorState._reset_state()`` clears it (the process group is kept);
    ``tests/train/test_train_loop.py::test_accelerate_still_needs_the_private_precision_reset`` fails
    when accelerate stops refusing, or drops the reset.
    """
    accumulation_steps(s.global_batch, s.batch_size, PartialState().num_processes)
    AcceleratorState._reset_state()
    return Accelerator(mixed_precision=s.mixed_precision)


def _prepare(trainee: Trainee, train: LabelledSet, dev: LabelledSet, s: TrainConfig) -> PreparedRun:
    """Seed, accelerator, AdamW with linear warmup then decay over every epoch's steps, prepared objects."""
    set_seed(s.seed)
    accelerator = _accelerator(s)
    dev_loader = DataLoader(ExampleDataset(dev), batch_size=s.eval_batch_size, collate_fn=trainee.collator)
    total_steps = s.max_epochs * math.ceil(len(train.labels) / s.global_batch)
    optimizer = torch.optim.AdamW(_param_groups(trainee.groups, s))
    scheduler = get_linear_schedule_with_warmup(
        optimizer, round(s.warmup_fraction * total_steps), total_steps
    )
    model, optimizer, dev_loader = accelerator.prepare(trainee.model, optimizer, dev_loader)
    trainee = Trainee(model, trainee.groups, trainee.output_kind, trainee.collator)
    return PreparedRun(accelerator, trainee, optimizer, scheduler, dev_loader, train, s)


def _micro_step(run: PreparedRun, indices: list[int], scale: float, where: tuple[int, int]) -> float:
    """Forward and backward of one micro-batch (positions ``indices`` of the training set): the gradient
    of ``scale`` x its summed example losses (0 for a stand-in; DDP then averages over the processes);
    returns the summed losses. ``where``: (epoch, optimiser step), for errors naming the records."""
    examples = ExampleDataset(run.train)
    batch = send_to_device(run.trainee.collator([examples[i] for i in indices]), run.accelerator.device)
    out = run.model(**batch["inputs"])
    finite = torch.isfinite(out.masses).all(-1)  # (b,); checked before the loss validates the masses
    if not bool(finite.all()):
        raise _nonfinite("non-finite outputs", *where, batch, run.train, ~finite)
    summed = run.losses(out, batch)[1].sum()
    value = summed.item()
    if not math.isfinite(value):
        raise _nonfinite(f"training loss {value}", *where, batch, run.train)
    run.accelerator.backward(summed * scale)
    return value


def _train_step(
    run: PreparedRun, n_step: int, micro: list[MicroBatch], where: tuple[int, int]
) -> tuple[float, int]:
    """One optimiser step over this process's micro-batches of a step of ``n_step`` examples (all
    processes); returns this process's summed loss and example count. Gradients synchronise over the
    processes on the last micro-batch only (``no_sync`` before it); a stand-in runs only there."""
    s, accelerator, processes = run.settings, run.accelerator, run.accelerator.num_processes
    loss_sum, count = 0.0, 0
    for a, (indices, real) in enumerate(micro):
        last = a == len(micro) - 1
        if not real and not last:
            continue
        with contextlib.nullcontext() if last else accelerator.no_sync(run.model):
            value = _micro_step(run, indices, float(real) * processes / n_step, where)
        if real:
            loss_sum, count = loss_sum + value, count + len(indices)
    norm = accelerator.clip_grad_norm_(run.model.parameters(), s.max_grad_norm)
    if norm is not None and s.mixed_precision != "fp16" and not math.isfinite(float(norm)):
        # (fp16 runs skip such steps through their gradient scaler)
        raise _nonfinite(f"gradient norm {float(norm)}", *where, {"index": torch.tensor(indices)}, run.train)
    run.optimizer.step()
    if not run.optimizer.step_was_skipped:  # (fp16: the gradient scaler skipped an overflowing step)
        run.scheduler.step()
    run.optimizer.zero_grad()
    return loss_sum, count


def _train_epoch(run: PreparedRun, epoch: int, state: EpochState) -> float:
    """Every optimiser step of ``epoch`` (the order of ``EpochSampler``); the mean training loss over all
    processes."""
    s, accelerator = run.settings, run.accelerator
    sampler = EpochSampler(len(run.train.labels), s.seed)
    sampler.set_epoch(epoch)
    run.model.train()
    totals = torch.zeros(2, dtype=torch.float64, device=accelerator.device)  # loss sum, examples
    steps = step_batches(
        list(sampler), s.global_batch, s.batch_size, accelerator.num_processes, accelerator.process_index
    )
    for n_step, micro in steps:
        loss_sum, count = _train_step(run, n_step, micro, (epoch, state.steps))
        totals += torch.tensor([loss_sum, count], dtype=torch.float64, device=totals.device)
        state.steps += 1
    loss_sum, count = accelerator.reduce(totals, reduction="sum").tolist()
    return loss_sum / count


@torch.no_grad()
def _evaluate(run: PreparedRun) -> tuple[float, float, float]:
    """Mean dev loss, answer NLL (-log BetP(y)) and accuracy (argmax BetP) over all processes."""
    run.model.eval()
    totals = torch.zeros(3, device=run.accelerator.device)  # loss sum, nll sum, correct
    n = 0
    for batch in run.dev_loader:
        out = run.model(**batch["inputs"])
        parts, losses = run.losses(out, batch)
        correct = (pignistic(out.masses, validate=False).argmax(-1) == batch["labels"]).float()
        stacked = run.accelerator.gather_for_metrics(torch.stack([losses, parts.answer_nll, correct], dim=-1))
        totals += stacked.sum(dim=0)
        n += stacked.shape[0]
    loss, nll, acc = (totals / n).tolist()
    return loss, nll, acc


def _epoch(run: PreparedRun, epoch: int, state: EpochState) -> EpochRecord:
    """Train ``epoch``, evaluate on dev, and update ``state`` (best epoch and weights, patience)."""
    s = run.settings
    train_loss = _train_epoch(run, epoch, state)
    dev_loss, dev_nll, dev_acc = _evaluate(run)
    score = dev_nll if s.select_by == "answer_nll" else dev_loss
    if not math.isfinite(score):
        raise NonFiniteValuesError(
            f"epoch {epoch + 1}: dev {s.select_by} is {score}; training diverged (lower train.lr_head / "
            "train.lr_adapter, or use mixed_precision 'no')"
        )
    record = EpochRecord(epoch, train_loss, dev_loss, dev_nll, dev_acc, run.optimizer.param_groups[0]["lr"])
    state.history.append(record)
    state.epoch = epoch
    if score < state.best_score:
        state.best_score, state.best_epoch, state.bad_epochs = score, epoch, 0
        state.best = trainable_state(run.accelerator.unwrap_model(run.model))
    else:
        state.bad_epochs += 1
    log.info(  # the logs count epochs from 1, the records keep the 0-based index
        "epoch %d of %d: train loss %.4f, dev nll %.4f, dev acc %.3f",
        epoch + 1,
        s.max_epochs,
        train_loss,
        dev_nll,
        dev_acc,
    )
    return record


def _start(run: PreparedRun, saving: Saving) -> tuple[EpochState, int | None]:
    """A fresh epoch state, or the saved one with ``saving.resume``; and the epoch resumed after."""
    state_dir = Path(saving.state_dir) if saving.state_dir else None
    if not (saving.resume and state_dir is not None and has_state(state_dir)):
        return EpochState(best=trainable_state(run.accelerator.unwrap_model(run.model))), None
    best, progress = load_state(state_dir, run.accelerator, run.model, run.optimizer, run.scheduler)
    log.info("resumed from %s after epoch %d", state_dir, progress["epoch"] + 1)
    return EpochState.restored(best, progress), progress["epoch"]


def fit(
    trainee: Trainee, train: LabelledSet, dev: LabelledSet, settings: TrainConfig, saving: Saving = Saving()
) -> FitResult:
    """Train ``trainee`` under ``settings`` (the ``train.*`` config: learning rates, schedule, epochs, batch
    sizes, precision, seed); leaves its model holding the best epoch's weights. Gradient accumulation
    steps follow from ``global_batch``, ``batch_size`` and the processes."""
    run = _prepare(trainee, train, dev, settings)
    state, resumed_from = _start(run, saving)
    for epoch in range(state.epoch + 1, settings.max_epochs):
        if state.stopped(settings.patience):
            break
        record = _epoch(run, epoch, state)
        if saving.state_dir:
            save_state(
                Path(saving.state_dir),
                run.accelerator,
                run.model,
                run.optimizer,
                run.scheduler,
                state.best,
                state.progress(),
            )
        if saving.on_epoch_end is not None:
            saving.on_epoch_end(record)
    load_trainable(run.accelerator.unwrap_model(run.model), state.best, "best checkpoint")
    run.accelerator.free_memory()
    return FitResult(
        state.best_epoch,
        state.best_score,
        state.epoch + 1,
        state.stopped(settings.patience),
        resumed_from,
        state.steps,
        state.history,
    )
