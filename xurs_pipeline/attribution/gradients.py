"""The gradient loop shared by EG and IG: Σ_s w_s (X - B_s) ⊙ ∇_Z F(Z_s), Z_s = B_s + α_s (X - B_s).

Per batch of ``samples_per_call`` plan entries: gather the prepared reference embeddings on the
device, form the intermediate embeddings, run one forward and one backward per objective column
(only the embeddings require grad; weights are frozen), and add the weighted products into float32
accumulators that stay on the device. Non-finite samples are flagged on the device; nothing is
copied to the host inside the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from xurs_pipeline.attribution.model import Objective, WidthModel, frozen
from xurs_pipeline.attribution.plan import SamplingPlan, batches
from xurs_pipeline.attribution.references import PreparedReferences


@dataclass
class GradientSums:
    """Accumulated contributions of one plan.

    e: (K, L, d) float32, Σ_s w_s (X - B_s) ⊙ ∇F_k(Z_s) per objective column k.
    per_ref: (M, K) float32, the same sums reduced over (L, d) and split by reference (for per-reference
      completeness residuals of IG).
    nonfinite: (n,) bool, samples whose contribution or output was inf/nan.
    grad_evals: number of gradient samples evaluated (n).
    """

    e: torch.Tensor
    per_ref: torch.Tensor
    nonfinite: torch.Tensor
    grad_evals: int


@dataclass(frozen=True)
class Prompt:
    """The original prompt as the model sees it: embeddings X (1, L, d), mask (1, L), positions (1, L)."""

    embeds: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor

    @property
    def length(self) -> int:
        return int(self.embeds.shape[1])


def accumulate(
    model: WidthModel,
    objective: Objective,
    prompt: Prompt,
    refs: PreparedReferences,
    plan: SamplingPlan,
    samples_per_call: int,
    on_batch: Callable[[int], None] | None = None,
) -> GradientSums:
    """Run ``plan`` in batches of ``samples_per_call``; see module docstring. Shapes in GradientSums."""
    x = prompt.embeds
    device, length, hidden = x.device, x.shape[1], x.shape[2]
    ref_index, alpha, weight = plan.to(device)
    n_cols = objective.n_columns
    e = torch.zeros((n_cols, length, hidden), dtype=torch.float32, device=device)
    per_ref = torch.zeros((len(refs), n_cols), dtype=torch.float32, device=device)
    nonfinite = torch.zeros(len(plan), dtype=torch.bool, device=device)
    with frozen(model), torch.enable_grad():  # type: ignore[arg-type]
        for part in batches(len(plan), samples_per_call):
            idx, a, w = ref_index[part], alpha[part], weight[part]
            size = idx.numel()
            with torch.no_grad():
                base = refs.embeds(model.embed, idx, x)  # (b, L, d)
                diff = x - base  # (b, L, d), model dtype
                diff32 = diff.float()
            z = (base + a.to(x.dtype)[:, None, None] * diff).requires_grad_(True)
            out = objective(
                model(
                    z,
                    prompt.attention_mask.expand(size, -1),
                    prompt.position_ids.expand(size, -1),
                ).masses
            )  # (b, K)
            for k in range(n_cols):
                (grad,) = torch.autograd.grad(out[:, k].sum(), z, retain_graph=k < n_cols - 1)
                with torch.no_grad():
                    prod = diff32 * grad.float()  # (b, L, d)
                    sample_sum = prod.sum(dim=(1, 2))  # (b,)
                    nonfinite[part] |= ~(torch.isfinite(sample_sum) & torch.isfinite(out[:, k].detach()))
                    e[k].add_(torch.tensordot(w, prod, dims=1))
                    per_ref[:, k].index_add_(0, idx, sample_sum * w)
            if on_batch is not None:
                on_batch(size)
    return GradientSums(e=e, per_ref=per_ref, nonfinite=nonfinite, grad_evals=len(plan))
