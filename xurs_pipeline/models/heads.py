"""Random-set output layers (Sec. 3.2): features (batch, in_features) -> raw outputs and masses via
``credal``.

- ``belief14``: 14 sigmoid outputs b_S estimate the lower probabilities of the non-empty proper subsets
  (``FOCAL_SETS[:14]`` order); ``credal.beliefs_to_masses`` applies the App. A conversion and the Eq. 5
  correction.
- ``mass15``: 15 logits, softmax over the 15 sets (the controlled models of Sec. 5.4, App. D.4).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from xurs_pipeline.credal import (
    FOCAL_SETS,
    N_BELIEFS,
    N_MASSES,
    beliefs_to_masses,
    masses_from_set_logits,
)

N_RAW = {"belief14": N_BELIEFS, "mass15": N_MASSES}
INIT_WEIGHT_SCALE = 1e-2
DEFAULT_DEPTH = 1
DEFAULT_DROPOUT = 0.0


def uniform_mass_beliefs() -> torch.Tensor:
    """(14,) Bel(S) of the uniform mass over all 15 sets: (2^|S| - 1) / 15 for each proper subset S.

    The belief head starts near here (small weights, the bias at these beliefs' logits): every intermediate
    value of the App. A recursion is then 1/15 > 0, so no positive part is clipped, s = 14/15 and every
    answer has width 7/15. A head started at sigmoid(0) = 0.5 everywhere would instead clip every pair and
    triple (0.5 - 2 x 0.5 < 0): width 0 for every input, and no gradient through the clipped sets.
    """
    return torch.tensor([(2 ** len(subset) - 1) / N_MASSES for subset in FOCAL_SETS[:N_BELIEFS]])


class ClassifierOutput(NamedTuple):
    """raw: (batch, 14) belief logits (sigmoid gives b_S) or (batch, 15) set logits.
    masses: (batch, 15) corrected masses in ``FOCAL_SETS`` order (float32)."""

    raw: torch.Tensor
    masses: torch.Tensor


def _check_head(output_kind: str, kind: str, depth: int, dropout: float) -> None:
    """Refuse a head setting out of range, naming its ``model.*`` key (ValueError)."""
    if output_kind not in N_RAW:
        raise ValueError(f"model.output_kind={output_kind!r}: must be one of {tuple(N_RAW)}")
    if kind not in ("linear", "mlp"):
        raise ValueError(f"model.head={kind!r}: must be one of ('linear', 'mlp')")
    if depth < 1:
        raise ValueError(f"model.head_depth={depth}: must be positive")
    if not 0 <= dropout < 1:
        raise ValueError(f"model.head_dropout={dropout}: must be in [0, 1)")


def _layers(in_features: int, n_out: int, kind: str, hidden_units: int, depth: int) -> nn.Module:
    """One linear layer (``kind="linear"``), or ``depth`` GELU layers of ``hidden_units`` then a linear
    output layer."""
    if kind == "linear":
        return nn.Linear(in_features, n_out)
    hidden: list[nn.Module] = []
    for width in [in_features] + [hidden_units] * (depth - 1):
        hidden += [nn.Linear(width, hidden_units), nn.GELU()]
    return nn.Sequential(*hidden, nn.Linear(hidden_units, n_out))


def _start_near_uniform(last: nn.Linear, output_kind: str) -> None:
    """Scale the output layer's weights down and set its bias so that the head starts at the uniform mass."""
    with torch.no_grad():
        # Small (not zero) output weights: the start stays at the bias for any feature scale, and
        # gradients still reach earlier layers, LoRA adapters and tuned blocks from the first step.
        last.weight.mul_(INIT_WEIGHT_SCALE)
        # belief14: start at the uniform mass's beliefs; mass15: zero logits = uniform over the 15 sets.
        if output_kind == "belief14":
            last.bias.copy_(torch.logit(uniform_mass_beliefs()))
        else:
            last.bias.zero_()


class RandomSetHead(nn.Module):
    """Linear layer, or an MLP with ``depth`` hidden layers of ``hidden_units`` GELU units, then the credal
    mapping to masses. ``dropout`` (probability) acts before every linear layer, in training mode only
    (as in Hugging Face classification heads); it holds no weights, so saved heads keep their keys.
    """

    def __init__(
        self,
        in_features: int,
        output_kind: str = "belief14",
        kind: str = "linear",
        hidden_units: int = 128,
        conversion: str = "positive_part",
        seed: int = 0,
        depth: int = DEFAULT_DEPTH,
        dropout: float = DEFAULT_DROPOUT,
    ) -> None:
        super().__init__()
        _check_head(output_kind, kind, depth, dropout)
        self.output_kind = output_kind
        self.kind = kind
        self.hidden_units = hidden_units
        self.conversion = conversion
        self.depth = depth
        self.dropout = nn.Dropout(dropout)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = _layers(in_features, N_RAW[output_kind], kind, hidden_units, depth)
        last = self.net[-1] if isinstance(self.net, nn.Sequential) else self.net
        assert isinstance(last, nn.Linear)
        _start_near_uniform(last, output_kind)

    def forward(self, features: torch.Tensor) -> ClassifierOutput:
        """features (batch, in_features) -> ClassifierOutput(raw (batch, 14|15), masses (batch, 15)).

        Values are not re-validated here (sigmoid and softmax outputs are in range by construction; a
        NaN from the backbone propagates so attribution can report it with its question and reference).
        """
        first = next(self.net.parameters())
        raw = features.to(first.dtype)
        for layer in self.net if isinstance(self.net, nn.Sequential) else (self.net,):
            raw = layer(self.dropout(raw) if isinstance(layer, nn.Linear) else raw)
        if self.output_kind == "belief14":
            masses = beliefs_to_masses(torch.sigmoid(raw), conversion=self.conversion, validate=False)
        else:
            masses = masses_from_set_logits(raw, validate=False)
        return ClassifierOutput(raw=raw, masses=masses)

    def describe(self) -> dict[str, object]:
        """The constructor arguments that rebuild this head (saved beside its weights)."""
        first = next(self.net.parameters())
        return {
            "in_features": first.shape[1],
            "output_kind": self.output_kind,
            "kind": self.kind,
            "hidden_units": self.hidden_units,
            "conversion": self.conversion,
            "depth": self.depth,
            "dropout": self.dropout.p,
        }


def saved_head_arguments(saved: dict[str, object]) -> dict[str, object]:
    """A saved :meth:`RandomSetHead.describe`, completed with the defaults of keys added since (heads
    saved before ``depth`` and ``dropout`` existed had one hidden layer and no dropout)."""
    return {"depth": DEFAULT_DEPTH, "dropout": DEFAULT_DROPOUT, **saved}
