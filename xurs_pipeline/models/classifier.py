"""``RandomSetClassifier``: a transformer backbone read at the last non-padding token, then a random-set
head (Sec. 3.2). Driven by embeddings so attribution and zero-masking can change them (Sec. 3.3, Eq. 8).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedModel

from xurs_pipeline.models.heads import ClassifierOutput, RandomSetHead


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


class RandomSetClassifier(nn.Module):
    """Backbone (a transformer without LM head, e.g. ``LlamaModel``, possibly peft-wrapped) + head.

    ``padding_side`` is how batches for this model are padded (``models.collate.pad_batch``); the
    classifier is correct for either side: it pools the last real token and takes positions from the mask.
    """

    def __init__(
        self, backbone: PreTrainedModel | nn.Module, head: RandomSetHead, padding_side: str = "left"
    ):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.padding_side = padding_side
        # Provenance for checkpoints: backbone directory and weights hash, adaptation mode.
        self.meta: dict[str, str] = {}

    @property
    def output_kind(self) -> str:
        return self.head.output_kind

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """input_ids (batch, seq) -> token embeddings (batch, seq, d)."""
        return self.backbone.get_input_embeddings()(input_ids)

    def features(
        self,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Last-layer representation (batch, d) at the last non-padding token."""
        if position_ids is None:
            position_ids = position_ids_from_mask(attention_mask)
        out = self.backbone(
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=False,
        )
        return pool_last_token(out.last_hidden_state, attention_mask)

    def forward(
        self,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        """inputs_embeds (batch, seq, d), attention_mask (batch, seq), position_ids (batch, seq) ->
        ClassifierOutput(raw (batch, 14|15), masses (batch, 15))."""
        return self.head(self.features(inputs_embeds, attention_mask, position_ids))

    def classify_ids(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> ClassifierOutput:
        """Convenience: ``forward(embed(input_ids), attention_mask, position_ids_from_mask(mask))``."""
        return self(self.embed(input_ids), attention_mask, position_ids_from_mask(attention_mask))
