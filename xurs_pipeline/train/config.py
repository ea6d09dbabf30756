"""Config schema of the ``train`` section (adaptation, optimisation, early stopping, resume)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from xurs_pipeline.errors import XursError

ADAPTATIONS = ("head_only", "partial", "lora")
SELECT_BY = ("answer_nll", "loss")
MIXED_PRECISION = ("no", "bf16", "fp16")
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class BatchSplitError(XursError, ValueError):
    """``train.global_batch`` does not split into ``train.batch_size`` per process x processes x steps."""


@dataclass
class TrainConfig:
    """Training settings (App. B.1, Table 4). ``global_batch`` is the number of examples per optimiser
    step whatever the number of processes; ``batch_size`` is per process, and the gradient accumulation
    steps follow from both and the world size (:func:`accumulation_steps`)."""

    adaptation: str = "head_only"
    partial_layers: int = 2
    lora_rank: int = 16
    lora_alpha: float = 32.0
    lora_dropout: float = 0.05
    lora_targets: list[str] = field(default_factory=lambda: list(DEFAULT_LORA_TARGETS))
    lr_head: float = 1e-3
    lr_adapter: float = 1e-4
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1
    max_epochs: int = 5
    patience: int = 2
    batch_size: int = 8
    global_batch: int = 32
    max_grad_norm: float = 1.0
    set_loss_weight: float = 0.1
    select_by: str = "answer_nll"
    seed: int = 7
    mixed_precision: str = "no"
    init_head_from: str = ""  # warm start: directory of a saved classifier whose head to copy
    # App. B.1: the LoRA runs begin with a trained output layer. head_first trains a head-only model on the
    # frozen backbone first (DVC stage train_head, these head_first_* settings) and starts this run's head
    # from it.
    head_first: bool = False
    head_first_lr: float = 1e-3
    head_first_epochs: int = 30
    head_first_patience: int = 5
    resume: bool = False
    state_dir: str = ".cache/xurs/train_state"
    feature_cache_dir: str = ".cache/xurs/features"
    feature_batch_size: int = 8
    eval_batch_size: int = 8
    predict_splits: list[str] = field(default_factory=lambda: ["dev", "test"])

    def __post_init__(self) -> None:
        for key, allowed in (
            ("adaptation", ADAPTATIONS),
            ("select_by", SELECT_BY),
            ("mixed_precision", MIXED_PRECISION),
        ):
            if getattr(self, key) not in allowed:
                raise ValueError(f"train.{key}={getattr(self, key)!r}: must be one of {allowed}")
        for key in (
            "partial_layers",
            "lora_rank",
            "max_epochs",
            "batch_size",
            "global_batch",
            "feature_batch_size",
            "eval_batch_size",
        ):
            if getattr(self, key) < 1:
                raise ValueError(f"train.{key}={getattr(self, key)}: must be a positive integer")
        for key in ("lr_head", "lr_adapter", "lora_alpha", "max_grad_norm"):
            if not getattr(self, key) > 0:
                raise ValueError(f"train.{key}={getattr(self, key)}: must be positive")
        for key in ("weight_decay", "set_loss_weight"):
            if getattr(self, key) < 0:
                raise ValueError(f"train.{key}={getattr(self, key)}: must be >= 0")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"train.seed={self.seed}: must be in [0, 2**32 - 1] (numpy seeds)")
        if self.patience < 0:
            raise ValueError(f"train.patience={self.patience}: must be >= 0 (0 disables early stopping)")
        for key in ("warmup_fraction", "lora_dropout"):
            if not 0 <= getattr(self, key) < 1:
                raise ValueError(f"train.{key}={getattr(self, key)}: must be in [0, 1)")
        self._check_splits_and_warm_start()

    def _check_splits_and_warm_start(self) -> None:
        """The prediction splits, the head-first warm start and the LoRA targets."""
        bad = [x for x in self.predict_splits if x not in ("train", "dev", "test")] or not self.predict_splits
        if bad:
            raise ValueError(
                f"train.predict_splits={list(self.predict_splits)}: must be a non-empty subset of "
                "['train', 'dev', 'test']"
            )
        if self.head_first and self.adaptation == "head_only":
            raise ValueError(
                "train.head_first=true: only adaptation lora or partial starts from a head-only run"
            )
        if self.head_first and self.init_head_from:
            raise ValueError(
                f"train.head_first=true and train.init_head_from={self.init_head_from!r}: "
                "choose one warm start"
            )
        if self.head_first_epochs < 1 or self.head_first_patience < 0 or not self.head_first_lr > 0:
            raise ValueError(
                f"train.head_first_epochs={self.head_first_epochs} (>= 1), train.head_first_patience="
                f"{self.head_first_patience} (>= 0), train.head_first_lr={self.head_first_lr} (> 0)"
            )
        if not self.lora_targets:
            raise ValueError("train.lora_targets=[]: name at least one module (e.g. q_proj)")
        accumulation_steps(self.global_batch, self.batch_size, 1)  # at check time, not when train starts


def accumulation_steps(global_batch: int, batch_size: int, processes: int) -> int:
    """Gradient accumulation steps so that ``batch_size * steps * processes == global_batch``.

    Table 4 / App. B.1: 8 workers x batch 1 x 4 steps = 32; one process runs the same 32 as 1 x 32.
    Raises naming ``train.global_batch`` when it is not a multiple of ``batch_size * processes``.
    """
    per_step = batch_size * processes
    if processes < 1 or global_batch % per_step:
        shown = "" if processes == 1 else f" x {processes} processes"
        raise BatchSplitError(
            f"train.batch_size={batch_size}{shown} does not divide train.global_batch={global_batch}; "
            f"choose a batch_size that divides global_batch{' / processes' if shown else ''}"
        )
    return global_batch // per_step


def head_first_settings(t: TrainConfig, processes: int = 1) -> TrainConfig:
    """The head-only run that ``t`` (``head_first``) starts from: same data, seed and global batch, the
    ``head_first_*`` learning rate, epochs and patience, the whole global batch per step split over the
    ``processes`` (cached frozen features make that cheap)."""
    accumulation_steps(t.global_batch, 1, processes)  # names train.global_batch if it does not split
    return replace(
        t,
        adaptation="head_only",
        lr_head=t.head_first_lr,
        max_epochs=t.head_first_epochs,
        patience=t.head_first_patience,
        batch_size=t.global_batch // processes,
        mixed_precision="no",
        head_first=False,
        init_head_from="",
    )
