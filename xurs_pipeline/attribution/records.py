"""Output records of the ``attribute`` stage: one row per explained (record_id, target option).

Schema ``attributions`` (ARCHITECTURE.md "Contracts"): token scores (signed sums and L2 magnitudes a_i,
Sec. 3.4), widths at the input and at every reference (natural and prepared, Eq. 10), the completeness
residual R (Eq. 9) with the estimator's own error bound, whether its budget ran out before its tolerance
(``budget_exhausted``), the roughness of the paths (total variation of F along them against the net
difference), gradient evaluations, precision and seeds. Coordinate-level e (L, d) goes to a
safetensors file per row (``coords_file``); with several collections each collection's e is kept too.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from xurs_pipeline.attribution.reduction import reduce_tokens
from xurs_pipeline.io import Provenance

if TYPE_CHECKING:
    from xurs_pipeline.attribution.config import AttributionConfig
    from xurs_pipeline.attribution.estimators import CollectionResult
    from xurs_pipeline.attribution.references import PreparedReferences

SCHEMA = "attributions"
# roughness = total variation / |F(X) - F(B)|, the net difference floored (widths lie in [0, 1] and are
# float32, so differences below ~1e-6 are rounding): flat paths (0 / 0) stay finite for JSON
NET_FLOOR = 1e-6
SCHEMA_VERSION = 1


def record_stem(record_id: str) -> str:
    """A file-name stem for a record id: readable, filesystem-safe, collision-free (hash suffix)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", record_id)[:80]
    return f"{safe}.{hashlib.sha256(record_id.encode()).hexdigest()[:8]}"


def coords_name(record_id: str, target: int) -> str:
    """File name of one row's coordinate tensors."""
    return f"{record_stem(record_id)}.c{target}.safetensors"


@dataclass
class NonFiniteReport:
    """Where inf/nan appeared: question, targets, what was evaluated, collection, reference ids."""

    record_id: str
    targets: list[int]
    where: str
    collection: int
    reference_ids: list[str]
    precision: str

    def message(self) -> str:
        refs = ", ".join(self.reference_ids[:10]) or "none"
        more = f" (+{len(self.reference_ids) - 10} more)" if len(self.reference_ids) > 10 else ""
        return (
            f"record {self.record_id}, targets {self.targets}: non-finite {self.where} in {self.precision} "
            f"(collection {self.collection}, references: {refs}{more}). Nothing was written for this "
            f"question; try attribution.precision=bfloat16 or float32."
        )


INTERVAL_RULE_NAMES = {"k15": "gauss_kronrod_15", "trapezoid": "adaptive_trapezoid"}  # kronrod's, per rule


def quadrature_name(cfg: AttributionConfig) -> str:
    """The row's ``quadrature``: kronrod's interval rule, IG's ``ig_quadrature``, certified's lattice."""
    if cfg.method == "kronrod":
        return INTERVAL_RULE_NAMES[cfg.kronrod_rule]
    if cfg.method == "ig":
        return cfg.ig_quadrature
    return "tent_lattice" if cfg.method == "certified" else ""


@dataclass
class TargetAttribution:
    record_id: str
    target: int
    predicted: int
    answer_idx: int
    method: str
    reference: str
    route: str
    target_fn: str
    precision: str
    quadrature: str
    path: str
    seed: int
    plan_seeds: list[int]
    n_tokens: int
    token_signed: list[float]
    token_magnitude: list[float]
    width_input: float
    betp: list[float]
    width_reference_mean: float
    width_difference: float
    signed_sum: float
    residual: float
    residual_collections: list[float]
    error_bound: float
    budget_exhausted: bool
    path_variation: float
    roughness: float
    reference_variation: list[float]
    reference_record_ids: list[str]
    reference_collection: list[int]
    width_reference_natural: list[float | None]
    width_reference_prepared: list[float]
    reference_draws: list[int]
    reference_points: list[int]
    reference_residual: list[float]
    changed_positions: list[int]
    prepared_input_ids: list[int]
    grad_evals: int
    forward_evals: int
    coords_file: str
    coords: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, run: QuestionRun, t: int, target: int) -> TargetAttribution:
        """Row for target index ``t`` (option ``target``) of one attributed question."""
        cfg, q, results = run.cfg, run.q, run.results
        e = run.e[t]  # (L, d) float32, the averaged coordinate attribution
        width_input = float(run.w_x[target])
        per_mean = [float(r.reference_mean[t]) for r in results]
        ref_mean = float(np.mean(per_mean))
        signed_sum = float(e.sum())
        coords = {"e": e.detach().cpu().contiguous()}
        if len(results) > 1:
            coords.update({f"e_collection_{k}": r.e[t].cpu().contiguous() for k, r in enumerate(results)})
        return cls(
            record_id=q.record_id,
            target=target,
            predicted=run.predicted,
            answer_idx=q.answer_idx,
            method=cfg.method,
            reference=cfg.reference,
            route=cfg.route,
            target_fn=cfg.target_fn,
            precision=cfg.precision,
            quadrature=quadrature_name(cfg),
            path=cfg.path if cfg.path == "straight" else f"{cfg.path}_{cfg.path_block}",
            seed=cfg.seed,
            plan_seeds=[int(r.plan_seed) for r in results if r.plan_seed is not None],
            n_tokens=int(e.shape[0]),
            token_signed=e.sum(-1).cpu().tolist(),
            token_magnitude=reduce_tokens(e, cfg.token_reduction).cpu().tolist(),
            width_input=width_input,
            betp=run.betp.cpu().tolist(),
            width_reference_mean=ref_mean,
            width_difference=width_input - ref_mean,
            signed_sum=signed_sum,
            residual=abs(signed_sum - (width_input - ref_mean)),  # Eq. 9
            residual_collections=[
                abs(float(r.e[t].sum()) - (width_input - m)) for r, m in zip(results, per_mean, strict=True)
            ],
            error_bound=float(np.mean([r.error_bound[t] for r in results])),
            budget_exhausted=any(r.exhausted for r in results),
            **run.path_columns(t, target),
            **run.reference_columns(t, target),
            grad_evals=sum(r.grad_evals for r in results),
            forward_evals=run.forward_evals,
            coords_file=coords_name(q.record_id, target),
            coords=coords,
        )

    def to_row(self) -> dict[str, Any]:
        """The Parquet row (everything except the coordinate tensors)."""
        return {name: getattr(self, name) for name in COLUMNS}


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TargetAttribution) if f.name != "coords")


def provenance(config_hash: str) -> Provenance:
    return Provenance(SCHEMA, SCHEMA_VERSION, config_hash)


@dataclass(frozen=True)
class Question:
    """One prompt to explain; ``paired_*`` is the paired prompt for aligned references; ``read``: the
    positions of each span whose order kronrod's ``read`` rule certifies (the swap study's cues), or None."""

    record_id: str
    input_ids: tuple[int, ...]
    answer_idx: int
    paired_id: str | None = None
    paired_ids: tuple[int, ...] | None = None
    read: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class QuestionRun:
    """One attributed question, what its rows are built from: the question and config, the predicted
    option, the widths at the input (4,) and BetP (4,), the averaged attribution ``e`` (T, L, d) of the
    T targets, each reference collection's estimator result, its references with their natural widths
    (n, 4) or None, and its prepared references' widths (n, 4); forward evaluations spent."""

    q: Question
    cfg: AttributionConfig
    predicted: int
    w_x: torch.Tensor
    betp: torch.Tensor
    e: torch.Tensor
    results: list[CollectionResult]
    collections: list[tuple[PreparedReferences, torch.Tensor | None]]
    prepared: list[torch.Tensor]
    forward_evals: int

    def path_columns(self, t: int, target: int) -> dict[str, Any]:
        """``path_variation`` and ``roughness`` (total variation against the net difference, floored)."""
        width_input = float(self.w_x[target])
        diffs = [abs(width_input - float(v)) for p in self.prepared for v in p[:, target].cpu()]
        variation = float(np.nanmean(np.concatenate([r.variation[:, t] for r in self.results])))
        return {"path_variation": variation, "roughness": variation / max(float(np.mean(diffs)), NET_FLOOR)}

    def reference_columns(self, t: int, target: int) -> dict[str, Any]:
        """The per-reference columns (in collection order) and, for a single aligned or zero reference,
        its changed positions and prepared token ids."""
        results, collections = self.results, self.collections
        single = collections[0][0] if self.cfg.reference in ("aligned", "zero") else None
        single_ids = single.prepared_ids if single is not None else None
        return {
            "reference_variation": [float(v) for r in results for v in r.variation[:, t]],
            "reference_record_ids": [rid for refs, _ in collections for rid in refs.record_ids],
            "reference_collection": [k for k, (refs, _) in enumerate(collections) for _ in refs.record_ids],
            "width_reference_natural": [
                None if natural is None else float(natural[i, target])
                for refs, natural in collections
                for i in range(len(refs))
            ],
            "width_reference_prepared": [float(v) for p in self.prepared for v in p[:, target].cpu()],
            "reference_draws": [int(v) for r in results for v in r.draws],
            "reference_points": [int(v) for r in results for v in r.points],
            "reference_residual": [float(v) for r in results for v in r.ref_residual[:, t]],
            "changed_positions": list(single.changed_positions[0]) if single is not None else [],
            "prepared_input_ids": single_ids[0].cpu().tolist() if single_ids is not None else [],
        }
