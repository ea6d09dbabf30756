"""Zero-masking over an attribution run (Table 1 and its top-k curve), as tables and metrics.

For every attribution row (record_id, explained option c) the prompt's embeddings are masked as in
Eq. 8 and ranked by that row's token magnitudes. Rows may carry a ``target_fn`` column (``width``,
``entropy`` or ``betp``, see :mod:`targets`); without it every row is a width attribution. Questions
are the bootstrap unit: a question with several explained options contributes the mean of its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from xurs_pipeline.attribution.masked import MassFn
from xurs_pipeline.evaluation.bootstrap import mean_advantage_interval
from xurs_pipeline.evaluation.masking import MaskingEffect, MaskingQuestion, MaskingSpec, zero_masking_effects
from xurs_pipeline.io import ArtifactError


@dataclass(frozen=True)
class BootstrapSpec:
    resamples: int = 10_000
    confidence: float = 0.95
    method: str = "percentile"
    seed: int = 0


def target_functions(attributions: pd.DataFrame) -> pd.Series:
    """The target function of each attribution row (``width`` when the table has no ``target_fn``)."""
    if "target_fn" in attributions.columns:
        return attributions["target_fn"].astype(str)
    return pd.Series("width", index=attributions.index)


def select_rows(attributions: pd.DataFrame, targets: Sequence[str], max_questions: int) -> pd.DataFrame:
    """Rows for the requested target functions, on the first ``max_questions`` questions (0 = all)."""
    fns = target_functions(attributions)
    missing = sorted(set(targets) - set(fns))
    if missing:
        raise ArtifactError(
            f"evaluation.targets asks for {missing}, but the attributions hold target functions "
            f"{sorted(set(fns))}; attribute those targets first or drop them from evaluation.targets"
        )
    rows = attributions[fns.isin(list(targets))].assign(target_fn=fns)
    if max_questions:
        keep = list(dict.fromkeys(rows["record_id"]))[:max_questions]
        rows = rows[rows["record_id"].isin(keep)]
    return rows


def mask_run(
    mass_fn: MassFn,
    embed: Callable[[torch.Tensor], torch.Tensor],
    prompts: pd.DataFrame,
    rows: pd.DataFrame,
    spec: MaskingSpec,
    device: torch.device,
    by: str = "target_fn",
) -> list[MaskingEffect]:
    """Zero-masking for each (record_id, c) of ``rows``; ``embed(input_ids (1, L)) -> (1, L, d)``. Each
    row's ranking is named by its ``by`` column: its target function, or (any other column, e.g. ``method``)
    a label, every ranking then scored on the rows' one target function (``target_fn``; width without one)."""
    by_id = prompts.set_index("record_id", drop=False)
    effects: list[MaskingEffect] = []
    groups = rows.groupby(["record_id", "target"], sort=False)
    passes = 1 + spec.k_max * (1 + spec.n_random)  # forward passes per question (Eq. 8 and the curve)
    bar = tqdm(groups, total=groups.ngroups, desc=f"zero-masking ({passes} passes each)", unit="question")
    for (record_id, c), group in bar:
        prompt = by_id.loc[record_id]
        ids = torch.tensor(np.asarray(prompt["input_ids"], dtype=np.int64), device=device)
        with torch.inference_mode():
            embeds = embed(ids[None])[0]
        length = ids.shape[0]
        rankings = {}
        for row in group.itertuples(index=False):
            magnitude = np.asarray(row.token_magnitude, dtype=np.float64)
            if magnitude.shape != (length,):
                raise ArtifactError(
                    f"record {record_id!r}, target {c}: {magnitude.size} token magnitudes but the prepared "
                    f"prompt has {length} tokens; attributions and prompts come from different data"
                )
            rankings[str(getattr(row, by))] = magnitude
        question = MaskingQuestion(
            record_id=str(record_id),
            embeds=embeds,
            attention_mask=torch.ones(length, dtype=torch.long, device=device),
            position_ids=torch.arange(length, device=device),
            eligible=np.asarray(prompt["eligible"], dtype=bool),
            c=int(c),
        )
        scored = None if by == "target_fn" else str(target_functions(group).iloc[0])
        effects.extend(zero_masking_effects(mass_fn, question, rankings, spec, scored))
    return effects


def effects_frame(effects: Sequence[MaskingEffect]) -> pd.DataFrame:
    """One row per (record_id, c, target_fn): D values, A(x) (Eq. 8) and the top-k curve as lists."""
    return pd.DataFrame(
        [
            {
                "record_id": e.record_id,
                "target": e.c,
                "target_fn": e.target,
                "f_x": e.f_x,
                "d_top": float(e.top_delta[0]),
                "d_random_mean": float(e.random_mean[0]),
                "advantage": float(e.advantage[0]),
                "top_positions": e.top_positions.tolist(),
                "random_positions": e.random_positions[:, 0].tolist(),
                "top_delta_k": e.top_delta.tolist(),
                "random_mean_k": e.random_mean.tolist(),
                "advantage_k": e.advantage.tolist(),
            }
            for e in effects
        ]
    )


def summarise(frame: pd.DataFrame, boot: BootstrapSpec) -> dict[str, dict[str, object]]:
    """Per target function: questions, mean advantage with its bootstrap interval, and the top-k curve.

    A question's curve stops at its number of eligible tokens, so point k of the curve is over the
    questions with at least k (its ``questions`` count says how many)."""
    out: dict[str, dict[str, object]] = {}
    for fn, rows in frame.groupby("target_fn", sort=True):
        per_q = rows.groupby("record_id", sort=False)
        top = _padded(per_q["top_delta_k"].apply(lambda s: np.mean(np.stack(s.to_numpy()), axis=0)))
        rnd = _padded(per_q["random_mean_k"].apply(lambda s: np.mean(np.stack(s.to_numpy()), axis=0)))
        curve = {}
        for k in range(top.shape[1]):
            has = ~np.isnan(top[:, k])
            ci = mean_advantage_interval(
                top[has, k], rnd[has, k], boot.resamples, boot.confidence, boot.method, boot.seed
            )
            n_k = int(has.sum())
            curve[f"k{k + 1}"] = {"mean": ci.mean, "low": ci.low, "high": ci.high, "questions": n_k}
        first = curve["k1"]
        out[str(fn)] = {
            "questions": int(top.shape[0]),
            "rows": len(rows),
            "mean_advantage": first["mean"],
            "ci_low": first["low"],
            "ci_high": first["high"],
            "mean_d_top": float(top[:, 0].mean()),
            "mean_d_random": float(rnd[:, 0].mean()),
            "bootstrap": {"resamples": boot.resamples, "confidence": boot.confidence, "method": boot.method},
            "curve": curve,
        }
    return out


def _padded(curves: pd.Series) -> np.ndarray:
    """Per-question curves of different lengths -> (questions, longest), NaN past a question's end."""
    longest = max(len(c) for c in curves)
    rows = [np.pad(np.asarray(c, float), (0, longest - len(c)), constant_values=np.nan) for c in curves]
    return np.stack(rows)


def attribution_budget(attributions: pd.DataFrame) -> dict[str, object]:
    """The attribution budget behind the ranking (Table 5 terms): method (IG: its quadrature; paths other
    than the straight one), precision, references, gradient evaluations."""
    per_q = attributions.drop_duplicates("record_id")
    refs = per_q["reference_record_ids"].map(len) if "reference_record_ids" in per_q else pd.Series([0])
    return {
        "method": sorted(set(attributions["method"])),
        "quadrature": sorted({str(q) for q in attributions.get("quadrature", pd.Series(dtype=str)) if q}),
        "path": sorted({str(p) for p in attributions.get("path", pd.Series(dtype=str)) if p != "straight"}),
        "precision": sorted({str(p) for p in attributions.get("precision", pd.Series(dtype=str))}),
        "reference": sorted(set(attributions["reference"])),
        "references_per_question": int(refs.median()),
        "grad_evals_per_question": float(np.median(per_q["grad_evals"])),
    }


def masking_precision(model: torch.nn.Module) -> str:
    """The arithmetic of the zero-masking passes: the dtype of the backbone's input embeddings."""
    return str(model.get_input_embeddings().weight.dtype).removeprefix("torch.")
