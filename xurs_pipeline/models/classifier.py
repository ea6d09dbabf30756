"""``RandomSetClassifier``: a transformer backbone pooled at chosen layers (by default the final layer at
the last non-padding token), then a random-set head (Sec. 3.2). Driven by embeddings so attribution and
zero-masking can change them (Sec. 3.3, Eq. 8).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import cast

import torch
from torch import nn
from transformers import DynamicCache, PreTrainedConfig, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from xurs_pipeline.models.config import DEFAULT_FEATURE_LAYERS, POOLINGS, check_feature_layers, resolve_layers
from xurs_pipeline.models.heads import ClassifierOutput, RandomSetHead

POOLED_KINDS = ("last", "mean")  # order of the pooling axis of ``pooled_states`` (and the feature cache)
POOLING_PARTS = {"last": ("last",), "mean": ("mean",), "last_mean": ("last", "mean")}
RMS_EPS = 1e-6


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions (batch, seq) counting only real tokens: 0, 1, ... from the first real token.

    Left padding ``[0 0 1 1 1]`` gives ``[0 0 0 1 2]``; right padding ``[1 1 1 0 0]`` gives
    ``[0 1 2 2 2]`` (padding positions are clamped and never attended to).
    """
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp(min=0)


def last_token_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index (batch,) of the last non-padding token of each row of a (batch, seq) mask, any padding side."""
    if attention_mask.ndim != 2:
        raise ValueError(f"attention_mask: expected shape (batch, seq), got {tuple(attention_mask.shape)}")
    present = attention_mask.bool()
    empty = ~present.any(dim=-1)
    if empty.any():
        raise ValueError(f"attention_mask: rows {empty.nonzero().flatten().tolist()} have no real token")
    seq = attention_mask.shape[-1]
    return seq - 1 - present.flip(-1).long().argmax(dim=-1)


def pool_last_token(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """hidden (batch, seq, d) -> (batch, d) at each row's last non-padding token."""
    index = last_token_index(attention_mask)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), index]


def pool_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """hidden (batch, seq, d) -> (batch, d): mean over each row's real tokens (summed in float32, returned
    in ``hidden``'s dtype); padding positions are excluded, whatever values they hold."""
    present = attention_mask.bool().unsqueeze(-1)  # (batch, seq, 1)
    total = torch.where(present, hidden.float(), 0.0).sum(dim=1)
    return (total / present.sum(dim=1).clamp(min=1)).to(hidden.dtype)


POOLERS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "last": pool_last_token,
    "mean": pool_mean,
}


def rms_normalise(x: torch.Tensor) -> torch.Tensor:
    """(..., d) -> x / sqrt(mean(x^2) + 1e-6) over the last axis, parameter-free (computed in float32,
    returned in ``x``'s dtype): brings intermediate residual-stream states to the final normed scale."""
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + RMS_EPS)).to(x.dtype)


def feature_width(hidden_size: int, feature_layers: Sequence[int], pooling: str) -> int:
    """Width of ``RandomSetClassifier.features``: d * n_layers * (2 for ``last_mean``, else 1)."""
    check_feature_layers(feature_layers)
    if pooling not in POOLING_PARTS:
        raise ValueError(f"model.pooling={pooling!r}: must be one of {POOLINGS}")
    return hidden_size * len(feature_layers) * len(POOLING_PARTS[pooling])


def cache_keyword(backbone: nn.Module) -> str:
    """The keyword a backbone's ``forward`` takes its key/value cache by: ``cache`` (transformers 5.2x, where
    ``past_key_values`` is deprecated) or ``past_key_values`` (earlier releases). A peft wrapper is looked
    through to its base model."""
    get_base = getattr(backbone, "get_base_model", None)
    base = get_base() if callable(get_base) else backbone
    return "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"


class RandomSetClassifier(nn.Module):
    """Backbone (a transformer without LM head, e.g. ``LlamaModel``, possibly peft-wrapped) + head.

    ``padding_side`` is how batches for this model are padded (``models.collate.pad_batch``); the
    classifier is correct for either side: it pools real tokens only and takes positions from the mask.
    ``feature_layers`` and ``pooling`` choose the head's input (see :meth:`features`); the head's input
    width must be ``feature_width(hidden_size, feature_layers, pooling)``.
    """

    def __init__(
        self,
        backbone: PreTrainedModel | nn.Module,
        head: RandomSetHead,
        padding_side: str = "left",
        feature_layers: Sequence[int] = DEFAULT_FEATURE_LAYERS,
        pooling: str = "last",
    ):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.padding_side = padding_side
        config = cast(PreTrainedConfig, backbone.config)
        self.n_layers: int = config.num_hidden_layers
        self.feature_layers = tuple(feature_layers)  # as configured (saved in checkpoints)
        self.layer_indices = resolve_layers(self.feature_layers, self.n_layers)  # in 0..n_layers
        self.pooling = pooling
        width = feature_width(config.hidden_size, self.layer_indices, pooling)
        if head.describe()["in_features"] != width:
            raise ValueError(
                f"head input width {head.describe()['in_features']} != {width}, the width of "
                f"model.feature_layers={list(self.feature_layers)} with model.pooling={pooling!r}"
            )
        # Provenance for checkpoints: backbone directory and weights hash, adaptation mode.
        self.meta: dict[str, str] = {}

    @property
    def output_kind(self) -> str:
        return self.head.output_kind

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """input_ids (batch, seq) -> token embeddings (batch, seq, d)."""
        embeddings = cast(nn.Module, self.backbone.get_input_embeddings())  # type: ignore[operator]
        return cast(torch.Tensor, embeddings(input_ids))

    def _hidden_states(
        self,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor | None,
        layers: Sequence[int],
    ) -> dict[int, torch.Tensor]:
        """{layer: hidden (batch, seq, d)} for ``layers`` in 0..n_layers; layer n_layers is the backbone's
        ``last_hidden_state`` (after its final norm). Other layers cost ``output_hidden_states``."""
        if position_ids is None:
            position_ids = position_ids_from_mask(attention_mask)
        intermediate = any(layer != self.n_layers for layer in layers)
        out = self.backbone(
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=False,
            **({"output_hidden_states": True} if intermediate else {}),
        )
        return {
            layer: out.last_hidden_state if layer == self.n_layers else out.hidden_states[layer]
            for layer in layers
        }

    def _assemble(self, pooled: Callable[[int, str], torch.Tensor]) -> torch.Tensor:
        """Concatenate ``pooled(layer, kind)`` (batch, d) over ``layer_indices``, then the pooling's kinds,
        RMS-normalising every layer but the final one -> (batch, d * n_layers * (2 | 1))."""
        pieces = [
            pooled(layer, kind) if layer == self.n_layers else rms_normalise(pooled(layer, kind))
            for layer in self.layer_indices
            for kind in POOLING_PARTS[self.pooling]
        ]
        return torch.cat(pieces, dim=-1)

    def features(
        self,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The head's input (batch, d * len(feature_layers) * (2 if last_mean else 1)), backbone dtype.

        For each of ``feature_layers`` in order (``output_hidden_states`` indices: 0 = embeddings output,
        -1 = ``last_hidden_state``, the final normed state), the pooled vector(s): ``last`` = the last
        non-padding token, ``mean`` = the mean over real tokens, ``last_mean`` = both, concatenated.
        Vectors from layers other than the final one are RMS-normalised (:func:`rms_normalise`, no
        parameters): the residual stream before the final norm is on a much larger scale. The default
        ([-1], ``last``) is the final state at the last token and runs no ``output_hidden_states``.
        """
        states = self._hidden_states(inputs_embeds, attention_mask, position_ids, self.layer_indices)
        return self._assemble(lambda layer, kind: POOLERS[kind](states[layer], attention_mask))

    def pooled_states(
        self,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Every layer pooled both ways, not normalised: (batch, n_layers + 1, 2, d), pooling axis in
        ``POOLED_KINDS`` order (last, mean). :meth:`features_from_pooled` turns it into features."""
        everything = range(self.n_layers + 1)
        states = self._hidden_states(inputs_embeds, attention_mask, position_ids, everything)
        return torch.stack(
            [
                torch.stack([POOLERS[kind](states[layer], attention_mask) for kind in POOLED_KINDS], 1)
                for layer in everything
            ],
            dim=1,
        )

    def features_from_pooled(self, pooled: Mapping[int, torch.Tensor]) -> torch.Tensor:
        """{layer in 0..n_layers: (n, 2, d) from :meth:`pooled_states`}, at least ``layer_indices`` ->
        the same features as :meth:`features` (n, D), without running the backbone."""
        return self._assemble(lambda layer, kind: pooled[layer][:, POOLED_KINDS.index(kind)])

    def forward(
        self,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        """inputs_embeds (batch, seq, d), attention_mask (batch, seq), position_ids (batch, seq) ->
        ClassifierOutput(raw (batch, 14|15), masses (batch, 15))."""
        return cast(ClassifierOutput, self.head(self.features(inputs_embeds, attention_mask, position_ids)))

    def classify_ids(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> ClassifierOutput:
        """Convenience: ``forward(embed(input_ids), attention_mask, position_ids_from_mask(mask))``."""
        positions = position_ids_from_mask(attention_mask)
        return cast(ClassifierOutput, self(self.embed(input_ids), attention_mask, positions))

    def prefix_cache(
        self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], ...] | None:
        """The backbone's keys and values after a prompt prefix inputs_embeds (1, p, d), mask (1, p),
        positions (1, p), without gradients: per layer ((1, kv_heads, p, head_dim) x 2), for
        :meth:`forward_after_prefix` (``attribution.prefix``). None where that cannot reproduce
        :meth:`forward`: features other than the final layer at the last token, or a backbone cache
        that is not plain full attention (sliding-window or linear-attention layers)."""
        if self.pooling != "last" or self.layer_indices != (self.n_layers,):
            return None
        with torch.no_grad():
            out = self.backbone(
                inputs_embeds=inputs_embeds,
                attention_mask=attention_mask,
                position_ids=position_ids,
                use_cache=True,
            )
        layers = out.past_key_values.layers
        if not all(type(layer) is DynamicLayer for layer in layers):
            return None
        return tuple((layer.keys, layer.values) for layer in layers)

    def forward_after_prefix(
        self,
        cache: tuple[tuple[torch.Tensor, torch.Tensor], ...],
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
    ) -> ClassifierOutput:
        """:meth:`forward` of a prompt whose first p positions are :meth:`prefix_cache`'s prefix, run on
        the rest only: inputs_embeds (batch, L - p, d), attention_mask (batch, L) of the whole prompt,
        position_ids (batch, L - p). Each call fills a fresh ``DynamicCache`` (``update`` concatenates
        new tensors), so ``cache`` is left as it was for the next call."""
        batch = inputs_embeds.shape[0]
        past = DynamicCache()
        for layer, (keys, values) in enumerate(cache):
            past.update(keys.expand(batch, -1, -1, -1), values.expand(batch, -1, -1, -1), layer)
        out = self.backbone(
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=True,
            **{cache_keyword(self.backbone): past},
        )
        suffix_mask = attention_mask[:, attention_mask.shape[1] - inputs_embeds.shape[1] :]
        return cast(ClassifierOutput, self.head(pool_last_token(out.last_hidden_state, suffix_mask)))
