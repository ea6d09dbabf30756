"""The accelerate training loop (Sec. 5.1, App. B.1, Table 4).

AdamW with separate learning rates for the head and the adapter (no weight decay on biases and norm
weights), linear warmup then linear decay, gradient accumulation, gradient-norm clipping, evaluation on
the dev set after every epoch, early stopping with patience, and the best epoch by dev answer NLL
restored at the end. With ``state_dir`` the full training state is saved after each epoch and
``resume=True`` continues from it, ending exactly where an uninterrupted run ends.

Several processes (torchrun / ``accelerate launch --multi_gpu``, DDP through accelerate) run the same
code: each optimiser step is the mean over the same examples whatever the process count
(:func:`~xurs_pipeline.train.data.step_batches`), dev metrics are gathered over the processes
(``gather_for_metrics``), and the main process saves the state (docs/scaling.md).
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
from xurs_pipeline.train.data import Collator, EpochSampler, ExampleDataset, LabelledSet, step_batches
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
        f"epoch {epoch}, optimizer step {step}: {what} for {scope} {names[:16]}; stopped before the weights "
        "took it (the last saved state is intact). Lower train.lr_head / train.lr_adapter, use "
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


@torch.no_grad()
def _evaluate(
    model: nn.Module,
    loader: DataLoader,
    accelerator: Accelerator,
    output_kind: str,
    w: float,
    computed_in: torch.dtype | None,
) -> tuple[float, float, float]:
    """Mean dev loss, answer NLL (-log BetP(y)) and accuracy (argmax BetP) over all processes;
    ``computed_in``: the autocast dtype (mixed precision) or None."""
    model.eval()
    totals = torch.zeros(3, device=accelerator.device)  # loss sum, nll sum, correct
    n = 0
    for batch in loader:
        out = model(**batch["inputs"])
        parts = rs_loss(out, batch["labels"], output_kind, w, batch.get("target_masses"), computed_in)
        losses = _example_losses(parts, output_kind, w)
        correct = (pignistic(out.masses, validate=False).argmax(-1) == batch["labels"]).float()
        stacked = accelerator.gather_for_metrics(torch.stack([losses, parts.answer_nll, correct], dim=-1))
        totals += stacked.sum(dim=0)
        n += stacked.shape[0]
    loss, nll, acc = (totals / n).tolist()
    return loss, nll, acc


def _micro_step(
    model: nn.Module,
    batch: dict[str, Any],
    accelerator: Accelerator,
    s: TrainConfig,
    output_kind: str,
    computed_in: torch.dtype | None,
    scale: float,
    where: tuple[int, int, LabelledSet],
) -> float:
    """Forward and backward of one micro-batch: the gradient of ``scale`` x its summed example losses
    (0 for a stand-in; DDP then averages over the processes); returns the summed losses.
    ``where``: (epoch, optimiser step, the training set) for errors naming the records."""
    out = model(**batch["inputs"])
    finite = torch.isfinite(out.masses).all(-1)  # (b,), before the loss validates the masses
    if not bool(finite.all()):
        raise _nonfinite("non-finite outputs", *where[:2], batch, where[2], ~finite)
    parts = rs_loss(
        out, batch["labels"], output_kind, s.set_loss_weight, batch.get("target_masses"), computed_in
    )
    summed = _example_losses(parts, output_kind, s.set_loss_weight).sum()
    value = summed.item()
    if not math.isfinite(value):
        raise _nonfinite(f"training loss {value}", *where[:2], batch, where[2])
    accelerator.backward(summed * scale)
    return value


def fit(
    model: nn.Module,
    groups: dict[str, list[nn.Parameter]],
    output_kind: str,
    train: LabelledSet,
    dev: LabelledSet,
    settings: TrainConfig,
    collator: Collator | None = None,
    state_dir: str | Path | None = None,
    resume: bool = False,
    on_epoch_end: Callable[[EpochRecord], None] | None = None,
) -> FitResult:
    """Train ``model`` (a ``TokenForward`` or ``FeatureForward``) under ``settings`` (the ``train.*`` config:
    learning rates, schedule, epochs, batch sizes, precision, seed); leaves it holding the best epoch's
    weights. Gradient accumulation steps follow from ``global_batch``, ``batch_size`` and the processes.

    ``groups``: trainable parameters by learning-rate group (``head``, ``adapter``). ``on_epoch_end`` is
    called after each epoch's state is saved (tests use it to simulate an interruption).
    """
    s = settings
    computed_in = AUTOCAST_DTYPES[s.mixed_precision]  # accelerate returns float32 outputs of autocast
    collator = collator or Collator()
    set_seed(s.seed)
    # accelerate keeps one precision per process: reset it so a process can train under another in turn
    # (run_pipeline's train_head in float32, then train under bf16; notebooks)
    AcceleratorState._reset_state()
    accumulation_steps(s.global_batch, s.batch_size, PartialState().num_processes)  # names the key if off
    # Accumulation is driven here (step_batches), not by accelerate: each optimiser step is the mean over
    # the real examples of the step whatever the number of processes or micro-batches.
    accelerator = Accelerator(mixed_precision=s.mixed_precision)
    processes, rank = accelerator.num_processes, accelerator.process_index
    sampler = EpochSampler(len(train.labels), s.seed)
    train_set = ExampleDataset(train)
    dev_loader = DataLoader(ExampleDataset(dev), batch_size=s.eval_batch_size, collate_fn=collator)
    steps_per_epoch = math.ceil(len(train_set) / s.global_batch)
    total_steps = s.max_epochs * steps_per_epoch
    optimizer = torch.optim.AdamW(_param_groups(groups, s))
    # not prepared: accelerate's scheduler wrapper steps once per process for each optimiser step
    scheduler = get_linear_schedule_with_warmup(
        optimizer, round(s.warmup_fraction * total_steps), total_steps
    )
    model, optimizer, dev_loader = accelerator.prepare(model, optimizer, dev_loader)
    state_path = Path(state_dir) if state_dir else None
    progress: dict[str, Any] = {
        "epoch": -1,
        "best_score": math.inf,
        "best_epoch": -1,
        "bad_epochs": 0,
        "history": [],
        "steps": 0,
    }
    best = trainable_state(accelerator.unwrap_model(model))
    resumed_from = None
    if resume and state_path is not None and has_state(state_path):
        best, progress = load_state(state_path, accelerator, model, optimizer, scheduler)
        resumed_from = progress["epoch"]
        log.info("resumed from %s after epoch %d", state_path, resumed_from)
    history = [EpochRecord(**h) for h in progress["history"]]
    stopped_early = s.patience > 0 and progress["bad_epochs"] >= s.patience
    for epoch in range(progress["epoch"] + 1, s.max_epochs):
        if stopped_early:
            break
        sampler.set_epoch(epoch)
        model.train()
        totals = torch.zeros(2, dtype=torch.float64, device=accelerator.device)  # loss sum, examples
        for n_step, micro in step_batches(list(sampler), s.global_batch, s.batch_size, processes, rank):
            for a, (indices, real) in enumerate(micro):
                last = a == len(micro) - 1  # gradients are synchronised over the processes here
                if not real and not last:
                    continue
                batch = send_to_device(collator([train_set[i] for i in indices]), accelerator.device)
                with contextlib.nullcontext() if last else accelerator.no_sync(model):
                    scale = float(real) * processes / n_step
                    value = _micro_step(model, batch, accelerator, s, output_kind, computed_in, scale,
                                        (epoch, progress["steps"], train))  # fmt: skip
                if real:
                    totals += torch.tensor([value, len(indices)], dtype=torch.float64, device=totals.device)
            norm = accelerator.clip_grad_norm_(model.parameters(), s.max_grad_norm)
            if norm is not None and s.mixed_precision != "fp16" and not math.isfinite(float(norm)):
                # (fp16 runs skip such steps through their gradient scaler)
                raise _nonfinite(f"gradient norm {float(norm)}", epoch, progress["steps"], batch, train)
            progress["steps"] += 1
            optimizer.step()
            if not optimizer.step_was_skipped:  # (fp16: the gradient scaler skipped an overflowing step)
                scheduler.step()
            optimizer.zero_grad()
        loss_sum, count = accelerator.reduce(totals, reduction="sum").tolist()
        dev_loss, dev_nll, dev_acc = _evaluate(
            model, dev_loader, accelerator, output_kind, s.set_loss_weight, computed_in
        )
        score = dev_nll if s.select_by == "answer_nll" else dev_loss
        if not math.isfinite(score):
            raise NonFiniteValuesError(
                f"epoch {epoch}: dev {s.select_by} is {score}; training diverged (lower train.lr_head / "
                "train.lr_adapter, or use mixed_precision 'no')"
            )
        record = EpochRecord(
            epoch, loss_sum / count, dev_loss, dev_nll, dev_acc, optimizer.param_groups[0]["lr"]
        )
        history.append(record)
        if score < progress["best_score"]:
            progress.update(best_score=score, best_epoch=epoch, bad_epochs=0)
            best = trainable_state(accelerator.unwrap_model(model))
        else:
            progress["bad_epochs"] += 1
        progress.update(epoch=epoch, history=[asdict(h) for h in history])
        log.info(
            "epoch %d: train loss %.4f, dev nll %.4f, dev acc %.3f",
            epoch,
            record.train_loss,
            dev_nll,
            dev_acc,
        )
        if state_path is not None:
            save_state(state_path, accelerator, model, optimizer, scheduler, best, progress)
        if on_epoch_end is not None:
            on_epoch_end(record)
        stopped_early = s.patience > 0 and progress["bad_epochs"] >= s.patience
    load_trainable(accelerator.unwrap_model(model), best, "best checkpoint")
    accelerator.free_memory()
    return FitResult(
        best_epoch=progress["best_epoch"],
        best_score=progress["best_score"],
        epochs_run=progress["epoch"] + 1,
        stopped_early=stopped_early,
        resumed_from_epoch=resumed_from,
        optimizer_steps=progress["steps"],
        history=history,
    )
