"""The gradient loop shared by EG and IG: Σ_s w_s (X - B_s) ⊙ ∇_Z F(Z_s), Z_s = B_s + α_s (X - B_s).

X is the prompt, or, for the pieces of a piecewise path (``attribution/paths.py``), each piece's end
(``PreparedReferences.end_ids``); B_s is the reference (or the piece's start) of sample s.

Per batch of ``samples_per_call`` plan entries: gather the prepared reference embeddings on the
device, form the intermediate embeddings, run one forward and one backward per objective column
(only the embeddings require grad; weights are frozen), and add the weighted products into float32
accumulators that stay on the device. Non-finite samples are flagged on the device; nothing is
copied to the host inside the loop.

Memory: a batch that runs out of memory (``torch.OutOfMemoryError`` or a RuntimeError saying "out of
memory", as long prompts do) is retried with half as many samples, down to one; the rest of the plan
keeps the smaller size. A batch's contributions are added only once all its objective columns
succeeded, so a retry never counts a sample twice. Failing at one sample per call raises
:class:`AttributionMemoryError`, which names ``attribution.samples_per_call`` and the prompt length.
Without a retry the sums are exactly those of a fixed batch size; after one they agree to rounding.

Shared prefix (``reuse_prefix``, config ``attribution.reuse_prefix``, ``attribution/prefix.py``): where
every reference drawn in the plan equals X on positions [0, p), Z_s equals X there for every sample, so
a model providing ``PrefixReuse`` runs X[:, :p] once per call (batch 1, no gradient) and each batch only
[p, L), with the full-length mask and the suffix's positions. Rows [0, p) of ``e`` stay exactly 0, as
(X - B_s) = 0 there; the sums agree with the full-length path to rounding. Prefixes shorter than
``prefix.MIN_TOKENS`` or ``prefix.MIN_FRACTION`` x L, and other models, run full length
(``GradientSums.prefix`` says which ran).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch

from xurs_pipeline.attribution.model import Objective, Prompt, WidthModel, frozen
from xurs_pipeline.attribution.plan import SamplingPlan
from xurs_pipeline.attribution.prefix import SharedPrefix, masses_on_path, path_rows, shared_prefix
from xurs_pipeline.attribution.references import PreparedReferences
from xurs_pipeline.errors import XursError

log = logging.getLogger("xurs")


class AttributionMemoryError(XursError, RuntimeError):
    """Out of memory even at one gradient sample per call."""


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocator failure (CUDA, MPS or CPU) rather than another RuntimeError."""
    return isinstance(err, torch.OutOfMemoryError) or (
        isinstance(err, RuntimeError) and "out of memory" in str(err).lower()
    )


@dataclass
class GradientSums:
    """Accumulated contributions of one plan.

    e: (K, L, d) float32, Σ_s w_s (X - B_s) ⊙ ∇F_k(Z_s) per objective column k.
    per_ref: (M, K) float32, the same sums reduced over (L, d) and split by reference (for per-reference
      completeness residuals of IG).
    slope: (n, K) float32, each sample's unweighted (X - B_s) · ∇F_k(Z_s) = dF_k/dα at α_s on the straight
      path from B_s to X (what quadrature error estimates and the path's roughness are computed from).
    value: (n, K) float32, F_k(Z_s) at each sample (the function along the path, for free).
    nonfinite: (n,) bool, samples whose contribution or output was inf/nan.
    grad_evals: number of gradient samples evaluated (n).
    prefix: positions [0, prefix) run once and shared by every sample (0: full-length path).
    e_per_ref: (M, K, L, d) float32, ``e`` split by reference (only with ``split_references``; else None).
    e_per_sample: (n, K, L, d) float32, each sample's weighted product (only with ``split_samples``; else
      None): what a rule that reweights its nodes later keeps (``trapezoid.py``).
    """

    e: torch.Tensor
    per_ref: torch.Tensor
    slope: torch.Tensor
    value: torch.Tensor
    nonfinite: torch.Tensor
    grad_evals: int
    prefix: int = 0
    e_per_ref: torch.Tensor | None = None
    e_per_sample: torch.Tensor | None = None


@dataclass(frozen=True)
class Batching:
    """How :func:`accumulate` runs a plan besides its batch size: ``on_batch`` is called with each batch's
    sample count (a progress bar), ``reuse_prefix`` runs the prefix every reference shares with X once
    (module docstring), ``split_references`` also keeps ``e`` per reference (one call for several
    references' nodes), ``split_samples`` per sample."""

    on_batch: Callable[[int], None] | None = None
    reuse_prefix: bool = True
    split_references: bool = False
    split_samples: bool = False


class _Accumulator:
    """The float32 sums of one plan on the prompt's device, as :class:`GradientSums` holds them, filled a
    batch at a time over rows [p, L) (p: the shared prefix, 0 without one)."""

    def __init__(self, n_cols: int, x: torch.Tensor, n_refs: int, n_samples: int, batching: Batching) -> None:
        device, f32 = x.device, torch.float32
        self.e = torch.zeros((n_cols, x.shape[1], x.shape[2]), dtype=f32, device=device)  # (K, L, d)
        self.per_ref = torch.zeros((n_refs, n_cols), dtype=f32, device=device)
        self.slope = torch.zeros((n_samples, n_cols), dtype=f32, device=device)
        self.value = torch.zeros((n_samples, n_cols), dtype=f32, device=device)
        self.nonfinite = torch.zeros(n_samples, dtype=torch.bool, device=device)
        split, per_sample = batching.split_references, batching.split_samples
        self.split = torch.zeros((n_refs, *self.e.shape), device=device) if split else None  # (M, K, L, d)
        self.samples = torch.zeros((n_samples, *self.e.shape), device=device) if per_sample else None

    @property
    def per_sample(self) -> bool:
        """Whether a batch's products are needed sample by sample (split by reference or by sample)."""
        return self.split is not None or self.samples is not None

    @torch.no_grad()
    def add(
        self,
        part: slice,
        idx: torch.Tensor,
        w: torch.Tensor,
        rows: slice,
        columns: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    ) -> None:
        """One batch's columns (:func:`_batch_sums`) for plan entries ``part`` with references ``idx`` and
        weights ``w``: each sample's (b, L - p, d) product kept by reference or by sample when split."""
        for k, (weighted, sample_sum, out_k) in enumerate(columns):
            self.nonfinite[part] |= ~(torch.isfinite(sample_sum) & torch.isfinite(out_k))
            if not self.per_sample:
                self.e[k, rows].add_(weighted)
            else:
                if self.split is not None:
                    self.split[:, k, rows].index_add_(0, idx, weighted)
                if self.samples is not None:
                    self.samples[part, k, rows] = weighted
                self.e[k, rows].add_(weighted.sum(0))
            self.per_ref[:, k].index_add_(0, idx, sample_sum * w)
            self.slope[part, k] = sample_sum
            self.value[part, k] = out_k.float()

    def sums(self, grad_evals: int, prefix: int) -> GradientSums:
        return GradientSums(
            self.e,
            self.per_ref,
            self.slope,
            self.value,
            self.nonfinite,
            grad_evals,
            prefix,
            self.split,
            self.samples,
        )


def accumulate(
    model: WidthModel,
    objective: Objective,
    prompt: Prompt,
    refs: PreparedReferences,
    plan: SamplingPlan,
    samples_per_call: int,
    batching: Batching = Batching(),
) -> GradientSums:
    """Run ``plan`` in batches of ``samples_per_call``, halved on out-of-memory (module docstring); shapes
    in :class:`GradientSums`."""
    x = prompt.embeds
    ref_index, alpha, weight = plan.to(x.device)
    sums = _Accumulator(objective.n_columns, x, len(refs), len(plan), batching)
    size, start = samples_per_call, 0
    with frozen(model), torch.enable_grad():  # type: ignore[arg-type]
        prefix = shared_prefix(model, prompt, refs, ref_index) if batching.reuse_prefix else None
        rows = slice(prefix.length if prefix else 0, x.shape[1])
        while start < len(plan):
            part = slice(start, min(start + size, len(plan)))
            try:
                batch = (ref_index[part], alpha[part], weight[part])
                columns = _batch_sums(model, objective, prompt, refs, batch, prefix, sums.per_sample)
            except RuntimeError as err:
                if not is_out_of_memory(err):
                    raise
                size = _smaller_batch(err, size, samples_per_call, x.shape[1], x.shape[2], x.device)
                continue
            sums.add(part, ref_index[part], weight[part], rows, columns)
            if batching.on_batch is not None:
                batching.on_batch(part.stop - part.start)
            start = part.stop
    return sums.sums(len(plan), rows.start)


def _batch_sums(
    model: WidthModel,
    objective: Objective,
    prompt: Prompt,
    refs: PreparedReferences,
    batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    prefix: SharedPrefix | None = None,
    per_sample: bool = False,
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """One batch of samples, ``batch`` = (reference index, alpha, weight) of each (b,); per objective
    column k: (Σ_s w_s (X - B_s) ⊙ ∇F_k(Z_s) (L - p, d) float32 over rows [p, L), or with ``per_sample``
    each sample's w_s (X - B_s) ⊙ ∇F_k(Z_s) (b, L - p, d); per-sample sums of (X - B_s) ⊙ ∇F_k(Z_s) (b,);
    F_k(Z_s) (b,)); p = 0 without a shared prefix. Only one column's (b, L - p, d) product is held at a
    time unless ``per_sample``."""
    idx, a, w = batch
    base, diff = path_rows(model, prompt, refs, idx, prefix)  # (b, L - p, d) each, model dtype
    z = (base + a.to(base.dtype)[:, None, None] * diff).requires_grad_(True)
    masses = masses_on_path(model, prompt, z, prefix)
    return _column_products(objective(masses), z, diff.float(), w, per_sample)


def _column_products(
    out: torch.Tensor, z: torch.Tensor, diff32: torch.Tensor, w: torch.Tensor, per_sample: bool
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per column k of ``out`` (b, K) = F(Z_s): the backward pass to ``z`` and (weighted products, per-sample
    sums, F_k) as :func:`_batch_sums` returns them, one (b, L - p, d) product held at a time."""
    columns = []
    for k in range(out.shape[1]):
        (grad,) = torch.autograd.grad(out[:, k].sum(), z, retain_graph=k < out.shape[1] - 1)
        with torch.no_grad():
            prod = diff32 * grad.float()  # (b, L - p, d)
            # per-sample sum accumulated in float64: its float32 value does not depend on the batch size
            # (an out-of-memory retry with fewer samples per call gives the same slopes, bit for bit)
            sample_sum = prod.sum(dim=(1, 2), dtype=torch.float64).float()
            weighted = prod * w[:, None, None] if per_sample else torch.tensordot(w, prod, dims=1)
            columns.append((weighted, sample_sum, out[:, k].detach()))
    return columns


def _smaller_batch(
    err: RuntimeError, size: int, configured: int, length: int, hidden: int, device: torch.device
) -> int:
    """Half of ``size`` after an out-of-memory error, or AttributionMemoryError at one sample.

    (The CUDA caching allocator releases its cached blocks itself before it reports out of memory.)
    """
    if size == 1:
        raise AttributionMemoryError(
            f"out of memory computing one gradient sample for a prompt of {length} tokens (hidden size "
            f"{hidden}) on {device}, after halving attribution.samples_per_call={configured} down to 1. "
            "Use a device with more memory, attribution.precision=bfloat16, or shorter prompts "
            f"(data.max_tokens). Cause: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        ) from err
    smaller = size // 2
    log.warning(
        "attribution: out of memory at %d gradient samples per call (prompt of %d tokens); retrying "
        "with %d. Set attribution.samples_per_call=%d to avoid the retries.",
        size,
        length,
        smaller,
        smaller,
    )
    return smaller
