"""Adaptation modes (Sec. 5.1, App. B.1): which parameters of a ``RandomSetClassifier`` train.

- ``head_only``: the backbone is frozen; only the head trains.
- ``partial``: the last ``k`` transformer blocks and the final norm train with the head.
- ``lora``: peft LoRA adapters (rank, scaling ``lora_alpha``, dropout) on the named linear modules
  (Table 4: q, k, v, o, gate, up, down projections) train with the head.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peft import LoraConfig, get_peft_model
from torch import nn

from xurs_pipeline.models.classifier import RandomSetClassifier


@dataclass(frozen=True)
class LoraSpec:
    """``train.lora_*`` settings."""

    rank: int = 16
    alpha: float = 32.0
    dropout: float = 0.05
    targets: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )


def decoder_blocks(backbone: nn.Module) -> nn.ModuleList:
    """The backbone's stack of transformer blocks (``.layers`` of Llama-family models)."""
    blocks = getattr(backbone, "layers", None)
    if isinstance(blocks, nn.ModuleList):
        return blocks
    lists = [m for m in backbone.modules() if isinstance(m, nn.ModuleList)]
    if not lists:
        raise ValueError(f"{type(backbone).__name__}: no list of transformer blocks found for partial tuning")
    return max(lists, key=len)


def linear_module_names(backbone: nn.Module) -> list[str]:
    """Sorted distinct last name components of the backbone's ``nn.Linear`` modules (LoRA targets)."""
    return sorted(
        {name.rsplit(".", 1)[-1] for name, m in backbone.named_modules() if isinstance(m, nn.Linear)}
    )


def apply_adaptation(
    classifier: RandomSetClassifier, mode: str, partial_layers: int = 2, lora: LoraSpec | None = None
) -> RandomSetClassifier:
    """Set ``requires_grad`` for ``mode`` (and wrap the backbone with LoRA); returns ``classifier``."""
    backbone = classifier.backbone
    backbone.requires_grad_(False)
    classifier.head.requires_grad_(True)
    if mode == "head_only":
        pass
    elif mode == "partial":
        blocks = decoder_blocks(backbone)
        if partial_layers > len(blocks):
            raise ValueError(
                f"train.partial_layers={partial_layers}: the backbone has only {len(blocks)} blocks"
            )
        for block in list(blocks)[-partial_layers:]:
            block.requires_grad_(True)
        norm = getattr(backbone, "norm", None)
        if isinstance(norm, nn.Module):
            norm.requires_grad_(True)
    elif mode == "lora":
        spec = lora or LoraSpec()
        available = linear_module_names(backbone)
        missing = [t for t in spec.targets if t not in available]
        if missing:
            raise ValueError(
                f"train.lora_targets: {missing} not in {type(backbone).__name__}; its linear modules are "
                f"{available}"
            )
        config = LoraConfig(
            r=spec.rank, lora_alpha=spec.alpha, lora_dropout=spec.dropout, target_modules=list(spec.targets)
        )
        classifier.backbone = get_peft_model(backbone, config)
    else:
        raise ValueError(f"train.adaptation={mode!r}: must be one of ('head_only', 'partial', 'lora')")
    classifier.meta["adaptation"] = mode
    return classifier


def trainable_groups(classifier: RandomSetClassifier) -> dict[str, list[nn.Parameter]]:
    """Trainable parameters by learning-rate group: ``head`` and ``adapter`` (LoRA or unfrozen blocks)."""
    return {
        "head": [p for p in classifier.head.parameters() if p.requires_grad],
        "adapter": [p for p in classifier.backbone.parameters() if p.requires_grad],
    }
