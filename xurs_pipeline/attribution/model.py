"""What the engine needs from a classifier, and the functions F it differentiates.

The engine is written against :class:`WidthModel`, a structural protocol that
``xurs_pipeline.models.RandomSetClassifier`` satisfies (``embed`` + ``forward`` -> output with
``masses``), so small analytic models can stand in for it in tests. A model that also provides
:class:`PrefixReuse` lets the engine skip a prompt prefix shared by every reference. Widths and
masses come only from ``xurs_pipeline.credal``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from xurs_pipeline.attribution.targets import option_values
from xurs_pipeline.credal import FOCAL_SETS, N_OPTIONS, pignistic

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


@dataclass(frozen=True)
class Prompt:
    """The original prompt as the model sees it: embeddings X (1, L, d), mask (1, L), positions (1, L)."""

    embeds: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor

    @property
    def length(self) -> int:
        return int(self.embeds.shape[1])


class HasMasses(Protocol):
    masses: torch.Tensor  # (batch, 15) in FOCAL_SETS order


class WidthModel(Protocol):
    """embed(input_ids (b, L)) -> (b, L, d); forward(inputs_embeds, attention_mask, position_ids)."""

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor: ...

    def __call__(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> HasMasses: ...


@runtime_checkable
class PrefixReuse(Protocol):
    """Optional capability of a WidthModel: continue a causal forward pass from a cached prompt prefix.

    ``prefix_cache(embeds (1, p, d), mask (1, p), positions (1, p))`` -> an opaque cache of the prefix,
    or None where the model cannot continue from one (then the engine runs full length).
    ``forward_after_prefix(cache, embeds (b, L - p, d), mask (b, L), positions (b, L - p))`` -> output
    with masses, equal to the full-length forward whose first p positions are the cached prefix. It
    must leave ``cache`` as it was (it is reused by every batch).
    """

    def prefix_cache(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> Any: ...

    def forward_after_prefix(
        self,
        cache: Any,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
    ) -> HasMasses: ...


def answer_set_indices(target: int) -> list[int]:
    """Indices into FOCAL_SETS of the sets S with c ∈ S and |S| > 1 (the terms of W_c, Eq. 2 and 4)."""
    if not 0 <= target < N_OPTIONS:
        raise ValueError(f"target option {target}: must be in 0..{N_OPTIONS - 1}")
    return [k for k, subset in enumerate(FOCAL_SETS) if target in subset and len(subset) > 1]


@dataclass(frozen=True)
class Objective:
    """Scalar functions of the masses whose embedding gradients are accumulated.

    ``columns`` maps masses (b, 15) -> (b, K); ``groups[t]`` lists the columns summed into target t's
    attribution. Direct route: one column W_c per target. Answer-set route: one column m(S) per set
    S ∋ c, |S| > 1, added with their signs (Eq. 4).
    """

    targets: tuple[int, ...]
    route: str
    column_index: tuple[int, ...]  # direct: option c per column; answer_set: focal-set index per column
    groups: tuple[tuple[int, ...], ...]
    target_fn: str = "width"  # direct route: the function of the masses explained (evaluation.targets)

    @classmethod
    def build(cls, targets: tuple[int, ...], route: str, target_fn: str = "width") -> Objective:
        if not targets:
            raise ValueError("no target option to explain")
        if route == "direct":
            return cls(targets, route, tuple(targets), tuple((i,) for i in range(len(targets))), target_fn)
        if route != "answer_set":
            raise ValueError(f"route={route!r}: must be 'direct' or 'answer_set'")
        if target_fn != "width":
            raise ValueError(f"route='answer_set' decomposes the width only, not target_fn={target_fn!r}")
        columns: list[int] = []
        groups: list[tuple[int, ...]] = []
        for target in targets:
            sets = answer_set_indices(target)
            groups.append(tuple(range(len(columns), len(columns) + len(sets))))
            columns.extend(sets)
        return cls(targets, route, tuple(columns), tuple(groups))

    @property
    def n_columns(self) -> int:
        return len(self.column_index)

    def __call__(self, masses: torch.Tensor) -> torch.Tensor:
        """masses (b, 15) -> (b, K) functions to differentiate (F_c, by default W_c (Eq. 2); or m(S))."""
        index = torch.tensor(self.column_index, device=masses.device)
        source = option_values(self.target_fn, masses, validate=False) if self.route == "direct" else masses
        return source.index_select(-1, index)

    def group(self, per_column: torch.Tensor) -> torch.Tensor:
        """Sum per-column values (K, ...) into per-target values (T, ...), signs kept (Eq. 4)."""
        return torch.stack([per_column[list(cols)].sum(0) for cols in self.groups])


def widths_and_betp(masses: torch.Tensor, target_fn: str = "width") -> tuple[torch.Tensor, torch.Tensor]:
    """masses (b, 15) -> (F (b, 4), BetP (b, 4)) in float32, from credal; F is the explained target
    function per option (the width W, Eq. 2, unless ``target_fn`` names another)."""
    values = option_values(target_fn, masses, validate=False)
    return values.float(), pignistic(masses, validate=False).float()


@contextlib.contextmanager
def frozen(model: nn.Module) -> Iterator[None]:
    """Weights never require grad and dropout is off inside the block; restored afterwards."""
    flags = [(p, p.requires_grad) for p in model.parameters()]
    was_training = model.training
    for param, _ in flags:
        param.requires_grad_(False)
    model.eval()
    try:
        yield
    finally:
        for param, flag in flags:
            param.requires_grad_(flag)
        model.train(was_training)


def set_precision(model: nn.Module, dtype: torch.dtype) -> None:
    """Cast a ``RandomSetClassifier``'s backbone to ``dtype`` in place and keep its head (which casts its
    input features to its own dtype) in float32, so masses, widths and the float32 accumulators follow
    half-precision passes, as the paper attributes in FP16/BF16 with FP32 averaging (Table 5). Any
    other model is cast whole."""
    from xurs_pipeline.models.classifier import RandomSetClassifier  # lazy: keeps transformers optional

    if isinstance(model, RandomSetClassifier):
        nn.Module.to(model.backbone, dtype)  # nn.Module's own: PreTrainedModel.to's stub rejects a dtype
        model.head.to(torch.float32)
    else:
        model.to(dtype)


def model_dtype(model: nn.Module) -> torch.dtype:
    """The floating dtype of the model's first floating parameter (float32 if it has none)."""
    for param in model.parameters():
        if param.is_floating_point():
            return param.dtype
    return torch.float32


def chosen_device(choice: str) -> torch.device:
    """The device a ``device`` key names: ``cuda``, ``cpu``, or ``auto`` (CUDA when there is one)."""
    return torch.device(
        "cuda" if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()) else "cpu"
    )


def model_device(model: nn.Module) -> torch.device:
    for param in model.parameters():
        return param.device
    return torch.device("cpu")


def block_list_name(model: nn.Module) -> str:
    """Dotted name of the model's longest ``nn.ModuleList`` (its transformer blocks)."""
    lists: list[tuple[int, str]] = [
        (len(m), name) for name, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m)
    ]
    if not lists:
        raise ValueError(f"{type(model).__name__} has no nn.ModuleList of blocks to randomise")
    return max(lists)[1]
