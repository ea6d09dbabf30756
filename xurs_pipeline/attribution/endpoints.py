"""Width evaluations without gradients: the input, prepared references, references as normally processed.

These are the endpoints of Eq. 9 and Eq. 10: F_c(X), F_c(B) under the original mask and positions
(prepared), and the reference prompt's width with its own tokens, mask and positions (natural); and F along
the straight paths between them (``path_values``, the ``certified`` rule's path warp).
All return every option's width (…, 4) in float32 so several targets share one evaluation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch

from xurs_pipeline.attribution.model import Objective, Prompt, WidthModel, frozen, widths_and_betp
from xurs_pipeline.attribution.plan import batches
from xurs_pipeline.attribution.prefix import masses_on_path, path_rows, shared_prefix
from xurs_pipeline.attribution.references import PreparedReferences


def natural_inputs(
    ids: Sequence[int], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A prompt alone, as normally processed: ids (1, L), all-ones mask (1, L), positions 0..L-1 (1, L)."""
    tensor = torch.tensor([list(ids)], dtype=torch.long, device=device)
    return tensor, torch.ones_like(tensor), torch.arange(tensor.shape[1], device=device)[None]


def prompt_of(model: WidthModel, ids: Sequence[int], device: torch.device) -> Prompt:
    """The original prompt's embeddings X (1, L, d), mask and positions (unpadded, Sec. 3.3)."""
    tensor, mask, positions = natural_inputs(ids, device)
    with torch.no_grad():
        return Prompt(model.embed(tensor), mask, positions)


@torch.no_grad()
def input_width(
    model: WidthModel, prompt: Prompt, target_fn: str = "width"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(W (4,), BetP (4,)) of the original prompt, float32 on the prompt's device (W: ``target_fn``)."""
    with frozen(model):  # type: ignore[arg-type]
        out = model(prompt.embeds, prompt.attention_mask, prompt.position_ids)
    width, betp = widths_and_betp(out.masses, target_fn)
    return width[0], betp[0]


@torch.no_grad()
def prepared_widths(
    model: WidthModel, prompt: Prompt, refs: PreparedReferences, batch_size: int, target_fn: str = "width"
) -> torch.Tensor:
    """F(B) of every prepared reference under the original mask and positions, (M, 4) float32."""
    device = prompt.embeds.device
    rows = []
    with frozen(model):  # type: ignore[arg-type]
        for part in batches(len(refs), batch_size):
            idx = torch.arange(part.start, part.stop, device=device)
            size = idx.numel()
            embeds = refs.embeds(model.embed, idx, prompt.embeds)
            out = model(embeds, prompt.attention_mask.expand(size, -1), prompt.position_ids.expand(size, -1))
            rows.append(widths_and_betp(out.masses, target_fn)[0])
    return torch.cat(rows)


@torch.no_grad()
def natural_widths(
    model: WidthModel,
    prompts: Sequence[Sequence[int]],
    batch_size: int,
    device: torch.device,
    target_fn: str = "width",
) -> torch.Tensor:
    """Widths of prompts as normally processed (own ids, mask, positions), (M, 4) float32.

    Prompts of equal length are batched together, so no padding enters the computation and each
    width equals that of the prompt evaluated alone.
    """
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, prompt in enumerate(prompts):
        by_length[len(prompt)].append(i)
    result = torch.empty((len(prompts), 4), dtype=torch.float32, device=device)
    with frozen(model):  # type: ignore[arg-type]
        for length in sorted(by_length):
            members = by_length[length]
            for part in batches(len(members), batch_size):
                chosen = members[part]
                ids = torch.tensor([list(prompts[i]) for i in chosen], dtype=torch.long, device=device)
                mask = torch.ones_like(ids)
                positions = torch.arange(length, device=device).expand(len(chosen), -1)
                out = model(model.embed(ids), mask, positions)
                result[torch.tensor(chosen, device=device)] = widths_and_betp(out.masses, target_fn)[0]
    return result


@torch.no_grad()
def path_values(
    model: WidthModel,
    objective: Objective,
    prompt: Prompt,
    refs: PreparedReferences,
    points: tuple[np.ndarray, np.ndarray],
    batch_size: int,
    reuse_prefix: bool = True,
) -> np.ndarray:
    """F_t at Z = B_r + α (X - B_r) under the original mask and positions, forwards only, for ``points`` =
    (reference index r (n,), α (n,)): (n, T) float64, the objective's columns grouped per target (Eq. 4).
    With ``reuse_prefix``, where every reference equals X on a prefix, the prefix runs once (``prefix.py``),
    as in the gradient loop."""
    index, alpha = points
    device = prompt.embeds.device
    idx_all = torch.as_tensor(index, dtype=torch.long, device=device)
    rows = []
    with frozen(model):  # type: ignore[arg-type]
        prefix = shared_prefix(model, prompt, refs, idx_all) if reuse_prefix else None
        for part in batches(len(index), batch_size):
            base, diff = path_rows(model, prompt, refs, idx_all[part], prefix)  # (b, L - p, d) each
            a = torch.as_tensor(alpha[part], device=device, dtype=base.dtype)[:, None, None]
            rows.append(objective(masses_on_path(model, prompt, base + a * diff, prefix)).float())
    grouped = objective.group(torch.cat(rows).T).T  # (n, T)
    result: np.ndarray = grouped.double().cpu().numpy()
    return result
