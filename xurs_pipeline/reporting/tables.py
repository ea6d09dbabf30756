"""The paper's tables as frames built from artifacts only (no number is typed here).

Each ``*_frame`` function takes already-loaded artifacts (frames, metric dicts, config sections) and
returns a frame whose columns a :class:`TableSpec` renders. Table numbers follow the paper:
1 zero-masking effects, 2 numerical checks, 3 reference endpoints, 4 training settings, 5 attribution
settings, 8 correction per configuration, 9 clue localisation, 10 V2 fit errors; plus the accuracy /
AUROC summary of Sec. 6.1, the controlled-model gates (App. D.3) and every check with its threshold
and verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.credal import credal_width
from xurs_pipeline.evaluation.agreement import spearman, topk_overlap
from xurs_pipeline.evaluation.gate_results import verdict_group
from xurs_pipeline.reporting.render import (
    Column,
    TableSpec,
    fmt_float,
    fmt_interval,
    fmt_percent,
    fmt_text,
    fmt_verdict,
)

EFFECTS = TableSpec(
    "table1_effects",
    "EffectRows",
    "Mean advantage in absolute width change from zero-masking the highest-ranked rather than random "
    "eligible tokens (Eq. 8); question-level bootstrap intervals.",
    [
        Column("configuration", "Model", align="l"),
        Column("target_fn", "Target", align="l"),
        Column("questions", "Questions"),
        Column("mean_advantage", "Mean advantage", fmt_float(4)),
        Column("ci", "95% CI", fmt_interval(4)),
        Column("budget", "Budget", align="l"),
    ],
)
NUMERICS = TableSpec(
    "table2_numerics",
    "NumericsRows",
    "Numerical checks; entries are medians. R is the completeness residual (Eq. 9); rank correlation and "
    "relative vector difference compare against a repeated run (other seed and sample count); a median over "
    "comparisons of which any is undefined (constant ranking, zero vector) is shown as a dash (a failure).",
    [
        Column("reference", "Reference", align="l"),
        Column("method", "Method", align="l"),
        Column("spearman", "Rank rho", fmt_float(4)),
        Column("residual", "R", fmt_float(4)),
        Column("relative_distance", "Vector difference", fmt_float(4)),
    ],
)
ENDPOINTS = TableSpec(
    "table3_endpoints",
    "EndpointRows",
    "Width differences using the original and aligned paired reference prompts (Eq. 10); shift is "
    "|Delta_natural - Delta_aligned|; residuals refer to attribution with aligned references.",
    [
        Column("case", "Case", align="l"),
        Column("delta_natural", "Delta natural", fmt_float(6)),
        Column("delta_aligned", "Delta aligned", fmt_float(6)),
        Column("shift", "Absolute shift", fmt_float(6)),
        Column("residual", "Residual", fmt_float(6)),
    ],
)
SETTINGS_COLUMNS = [Column("setting", "Setting", align="l"), Column("value", "Value", align="l")]
TRAINING = TableSpec("table4_training", "TrainingRows", "Training settings.", SETTINGS_COLUMNS)
ATTRIBUTION = TableSpec("table5_attribution", "AttributionRows", "Attribution settings.", SETTINGS_COLUMNS)
CORRECTION = TableSpec(
    "table8_correction",
    "CorrectionRows",
    "Correction on test questions per configuration. Rescaling means s > 1 + 1e-6; adjustment is the mean "
    "total absolute change from intermediate values to final masses.",
    [
        Column("configuration", "Configuration", align="l"),
        Column("n", "Questions"),
        Column("rescaling_pct", "Rescaling (%)", fmt_float(2)),
        Column("mean_total_adjustment", "Mean total adjustment", fmt_float(2)),
        Column("negative_share", "With negative values (%)", fmt_percent(1)),
    ],
)
LOCALISATION = TableSpec(
    "table9_localisation",
    "LocalisationRows",
    "Attribution to the distinguishing clue (App. C): clue share of magnitude, difference to the mean "
    "equal-length control window (pp), and the best clue rank (1 = highest).",
    [
        Column("record_id", "Case", align="l"),
        Column("reference", "Reference", align="l"),
        Column("region", "Region", align="l"),
        Column("clue_share_pct", "Clue share (%)", fmt_float(2)),
        Column("difference_pp", "Difference (pp)", fmt_float(2)),
        Column("best_rank", "Best rank", fmt_float(0)),
    ],
)
LOCALISATION_SUMMARY = TableSpec(
    "table9_localisation_summary",
    "LocalisationSummaryRows",
    "Clue localisation over all explained questions (App. C): mean clue share of the region's magnitude, "
    "mean difference to the equal-length clue-free control windows (pp) with its question-level bootstrap "
    "interval, median best clue rank and share of questions whose best clue token ranks first.",
    [
        Column("region", "Region", align="l"),
        Column("questions", "Questions"),
        Column("mean_clue_share_pct", "Clue share (%)", fmt_float(2)),
        Column("mean_difference_pp", "Difference (pp)", fmt_float(2)),
        Column("ci", "95% CI", fmt_interval(2)),
        Column("median_best_rank", "Median best rank", fmt_float(1)),
        Column("best_rank_1_share", "Rank 1 (%)", fmt_percent(0)),
    ],
)
CLUE_NULLS = TableSpec(
    "table9_clue_nulls",
    "ClueNullRows",
    "Clue localisation against its nulls (App. C, positions that can take attribution only): the trained "
    "model, the same estimator with the classifier's head re-initialised, and the input-only ranking "
    "(summed embedding distance to the references as prepared), on the same questions and references; "
    "random scores is the expected rank-1 share when every live position is equally likely to rank first.",
    [
        Column("region", "Region", align="l"),
        Column("ranking", "Ranking", align="l"),
        Column("questions", "Questions"),
        Column("best_rank_1_share", "Clue first (%)", fmt_percent(0)),
        Column("mean_clue_share_pct", "Clue share (%)", fmt_float(1)),
        Column("base_rate_rank_1", "Random scores: clue first (%)", fmt_percent(0)),
        Column("median_live_positions", "Live positions (median)", fmt_float(1)),
        Column("median_live_clue_positions", "Live clue positions (median)", fmt_float(1)),
    ],
)
CLUE_MASKING = TableSpec(
    "table1_clue_masking",
    "ClueMaskingRows",
    "Zero-masking the whole clue rather than equal-length clue-free windows of the case text: mean absolute "
    "width change of each and their mean difference, with its question-level bootstrap interval.",
    [
        Column("configuration", "Model", align="l"),
        Column("questions", "Questions"),
        Column("mean_d_clue", "Clue", fmt_float(4)),
        Column("mean_d_window", "Control windows", fmt_float(4)),
        Column("mean_advantage", "Mean advantage", fmt_float(4)),
        Column("ci", "95% CI", fmt_interval(4)),
    ],
)
FIT = TableSpec(
    "table10_fit",
    "FitRows",
    "Mean total absolute error E_m of the predicted answer-set probabilities per split (App. D.3).",
    [
        Column("configuration", "Configuration", align="l"),
        Column("split", "Split", align="l"),
        Column("n", "Records"),
        Column("mass_error", "Mean E_m", fmt_float(4)),
        Column("width_error", "Mean width error", fmt_float(4)),
    ],
)
ACCURACY = TableSpec(
    "accuracy",
    "AccuracyRows",
    "Accuracy and error-detection AUROC from the predicted answer's width and from its low probability.",
    [
        Column("configuration", "Configuration", align="l"),
        Column("split", "Split", align="l"),
        Column("n", "Questions"),
        Column("accuracy", "Accuracy", fmt_percent(1)),
        Column("auroc_width", "AUROC (width)", fmt_float(3)),
        Column("auroc_low_probability", "AUROC (low probability)", fmt_float(3)),
    ],
)
GATES = TableSpec(
    "gates",
    "GateRows",
    "Controlled-model gates (App. D.3) per split and wording-template group (all: every prediction); "
    "means within condition families first, then across families.",
    [
        Column("split", "Split", align="l"),
        Column("group", "Templates", align="l"),
        Column("name", "Gate", align="l"),
        Column("n", "n"),
        Column("value", "Value", fmt_float(4)),
        Column("rule", "Threshold", align="l"),
        Column("passed", "Verdict", fmt_verdict),
    ],
)
VERDICTS = TableSpec(
    "verdicts",
    "VerdictRows",
    "Every check with its value, threshold and verdict.",
    [
        Column("group", "Group", align="l"),
        Column("name", "Check", align="l"),
        Column("n", "n"),
        Column("value", "Value", fmt_float(4)),
        Column("rule", "Required", align="l"),
        Column("passed", "Verdict", fmt_verdict),
    ],
)

TARGETS = TableSpec(
    "targets_comparison",
    "TargetRows",
    "Width against the comparison targets (predictive entropy, BetP of the explained answer), each "
    "attributed with the same engine and budget and zero-masked (Eq. 8): mean advantage with its "
    "question-level bootstrap interval, and the agreement of each target's token order with the width's "
    "(median Spearman, mean top-k overlap, k = evaluation.top_k_max).",
    [
        Column("target_fn", "Target", align="l"),
        Column("questions", "Questions"),
        Column("mean_advantage", "Mean advantage", fmt_float(4)),
        Column("ci", "95% CI", fmt_interval(4)),
        Column("spearman_vs_width", "Rank rho vs width", fmt_float(3)),
        Column("overlap_vs_width", "Top-k overlap vs width", fmt_float(3)),
    ],
)


TARGET_LOCALISATION = TableSpec(
    "targets_localisation",
    "TargetLocalisationRows",
    "Which target's attribution finds the clue (Sec. 7's open comparison): width, predictive entropy and "
    "BetP attributed with the same engine, references and budget; per region, the completeness residual R "
    "(Eq. 9, median and max) each reached, the clue's mean share of the magnitude, its difference to the "
    "equal-length clue-free control windows (pp) with the question-level bootstrap interval, the median "
    "best clue rank, and the share of questions whose best clue token ranks first with its Wilson interval.",
    [
        Column("target_fn", "Target", align="l"),
        Column("region", "Region", align="l"),
        Column("questions", "Questions"),
        Column("residual_median", "Median R", fmt_float(4)),
        Column("residual_max", "Max R", fmt_float(4)),
        Column("mean_clue_share_pct", "Clue share (%)", fmt_float(2)),
        Column("mean_difference_pp", "Difference (pp)", fmt_float(2)),
        Column("ci", "95% CI", fmt_interval(2)),
        Column("median_best_rank", "Median best rank", fmt_float(1)),
        Column("best_rank_1_share", "Rank 1 (%)", fmt_percent(0)),
        Column("rank_1_ci", "Rank 1 95% CI (%)", fmt_interval(0, percent=True)),
    ],
)

ATTRIBUTION_ERROR = TableSpec(
    "attribution_error",
    "AttributionErrorRows",
    "Each explained answer's attribution error: completeness residual R (Eq. 9), the estimator's own error "
    "bound (kronrod: quadrature bound; EG: 95% half-width; IG: mean per-reference residual), gradient "
    "evaluations, path roughness (total variation of F along the paths over the net change) and whether "
    "the budget ran out before the tolerance. Rows whose budget ran out come first: they are named, "
    "never averaged away. With the attribute stage's own rerun (attribution.certified_rerun: other shifts, "
    "the same budget), App. B.4's cosine and relative distance of the answer's vector against the rerun's "
    "(a dash without one).",
    [
        Column("record_id", "Question", align="l"),
        Column("target", "Answer"),
        Column("method", "Estimator", align="l"),
        Column("residual", "R", fmt_float(4)),
        Column("error_bound", "Error bound", fmt_float(4)),
        Column("grad_evals", "Gradient evaluations"),
        Column("roughness", "Roughness", fmt_float(2)),
        Column("budget", "Budget", align="l"),
        Column("rerun_cosine", "Cosine vs rerun", fmt_float(4)),
        Column("rerun_distance", "Distance vs rerun", fmt_float(4)),
    ],
)


def attribution_error_frame(attributions: pd.DataFrame, vectors: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per explained (record_id, target) of the main run with its error columns
    (:data:`ATTRIBUTION_ERROR`) and its vector figures against the attribute stage's own rerun
    (``vectors``: its ``rerun_vectors.parquet``; NaN without one); questions whose budget ran out first,
    then by R, largest first."""
    if attributions.empty:
        return pd.DataFrame()
    rows = attributions.assign(
        exhausted=attributions["budget_exhausted"].astype(bool),
        budget=np.where(attributions["budget_exhausted"].astype(bool), "RAN OUT", "met"),
    )
    figures = ["record_id", "target", "cosine", "relative_distance"]
    compared = vectors[figures] if vectors is not None else pd.DataFrame(columns=figures)
    compared = compared.rename(columns={"cosine": "rerun_cosine", "relative_distance": "rerun_distance"})
    compared = compared.astype({"target": rows["target"].dtype})
    rows = rows.merge(compared, on=["record_id", "target"], how="left")
    rows = rows.sort_values(["exhausted", "residual"], ascending=[False, False], kind="stable")
    keep = ["record_id", "target", "method", "residual", "error_bound", "grad_evals", "roughness", "budget"]
    return rows[[*keep, "rerun_cosine", "rerun_distance"]].reset_index(drop=True)


def targets_frame(
    mask_metrics: Mapping[str, Any], attributions: pd.DataFrame, topk: int, reference_fn: str = "width"
) -> pd.DataFrame:
    """One row per zero-masked target function: its Table 1 numbers and the agreement of its token
    magnitudes with ``reference_fn``'s on the same (record_id, target), from ``attributions`` (all target
    functions' rows, column ``target_fn``). Empty when only one target function was attributed."""
    fns = sorted(set(attributions["target_fn"])) if "target_fn" in attributions else []
    if len(fns) < 2 or reference_fn not in fns:
        return pd.DataFrame()
    by_fn = {fn: rows.set_index(["record_id", "target"]) for fn, rows in attributions.groupby("target_fn")}
    base = by_fn[reference_fn]["token_magnitude"]
    rows = []
    for fn, m in mask_metrics["targets"].items():
        other = by_fn[fn]["token_magnitude"] if fn in by_fn else pd.Series(dtype=object)
        pairs = [
            (np.asarray(base[k], float), np.asarray(other[k], float))
            for k in base.index.intersection(other.index)
        ]
        rho = [spearman(a, b) for a, b in pairs]
        overlap = [topk_overlap(a, b, topk) for a, b in pairs]
        rows.append(
            {
                "target_fn": fn,
                "questions": m["questions"],
                "mean_advantage": m["mean_advantage"],
                "ci": (m["ci_low"], m["ci_high"]),
                "spearman_vs_width": float(np.median(rho)) if rho else np.nan,
                "overlap_vs_width": float(np.mean(overlap)) if overlap else np.nan,
            }
        )
    return pd.DataFrame(rows)


def effects_frame(mask_metrics: Mapping[str, Any], configuration: str) -> pd.DataFrame:
    """Table 1 rows from ``mask_eval/metrics.json``: one per target function."""
    budget = mask_metrics.get("budget", {})
    method = "/".join(budget.get("method", []))
    detail = ", ".join(budget.get("quadrature", []) + budget.get("path", []) + budget.get("precision", []))
    text = (
        f"{method}{f' ({detail})' if detail else ''}, {budget.get('references_per_question', '?')} "
        f"{'/'.join(budget.get('reference', []))} refs, "
        f"{budget.get('grad_evals_per_question', float('nan')):g} gradient evaluations"
    )
    if "masking_precision" in budget:  # written by mask_eval since issue 17
        text += f"; zero-masking in {budget['masking_precision']}"
    rows = [
        {
            "configuration": configuration,
            "target_fn": name,
            "questions": m["questions"],
            "mean_advantage": m["mean_advantage"],
            "ci": (m["ci_low"], m["ci_high"]),
            "budget": text,
        }
        for name, m in mask_metrics["targets"].items()
    ]
    return pd.DataFrame(rows)


def localisation_summary_frame(summary: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Table 9's summary rows from ``checks/checks.json``'s ``localisation`` (one per region)."""
    return pd.DataFrame(
        [{**m, "region": region, "ci": (m["ci_low"], m["ci_high"])} for region, m in summary.items()]
    )


def clue_nulls_frame(nulls: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """The clue-nulls rows from ``checks/checks.json``'s ``localisation_nulls`` (ranking -> region ->
    summary): one per (region, ranking), regions first; empty without a clue."""
    rows = [
        {**m, "region": region, "ranking": ranking.replace("_", " ")}
        for ranking, regions in nulls.items()
        for region, m in regions.items()
    ]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    return frame.sort_values("region", kind="stable").reset_index(drop=True)


def clue_masking_frame(mask_metrics: Mapping[str, Any], configuration: str) -> pd.DataFrame:
    """The clue-masking row from ``mask_eval/metrics.json``'s ``clue_masking`` (no row without a clue)."""
    m = mask_metrics.get("clue_masking") or {}
    if not m:
        return pd.DataFrame()
    return pd.DataFrame([{**m, "configuration": configuration, "ci": (m["ci_low"], m["ci_high"])}])


def numerics_frame(attributions: pd.DataFrame, comparisons: pd.DataFrame | None) -> pd.DataFrame:
    """Table 2 rows: per (reference, method), median residual and, given a repeated run, median Spearman
    and relative vector difference. ``comparisons`` is ``checks/details/compare_*.parquet`` or None."""
    rows = []
    for (reference, method), group in attributions.groupby(["reference", "method"], sort=True):
        row = {"reference": reference, "method": method, "residual": float(np.median(group["residual"]))}
        if comparisons is not None and not comparisons.empty:
            same = comparisons[comparisons["reference"] == reference]
            # NaN-propagating medians: an undefined comparison fails the median, as in `checks`
            row["spearman"] = float(np.median(same["spearman"])) if len(same) else float("nan")
            row["relative_distance"] = (
                float(np.median(same["relative_distance"])) if len(same) else float("nan")
            )
        else:
            row["spearman"] = row["relative_distance"] = float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=["reference", "method", "spearman", "residual", "relative_distance"])


def settings_frame(section: Mapping[str, Any], keys: list[str] | None = None) -> pd.DataFrame:
    """Tables 4 and 5: (setting, value) pairs straight from a config section."""
    keys = keys or list(section)
    return pd.DataFrame({"setting": keys, "value": [fmt_text(section[k]) for k in keys]})


def correction_frame(audit: Mapping[str, Any], split: str = "test") -> pd.DataFrame:
    """Table 8 row from ``predict/correction_audit.json`` for one split; no rows when the correction does
    not apply (a ``mass15`` head predicts masses directly: App. A and Eq. 5 act on belief heads only)."""
    if split not in audit:
        raise KeyError(
            f"correction audit has no split {split!r}; has {sorted(k for k in audit if k[0] != '_')}"
        )
    if audit[split].get("correction_applies") is False:
        return pd.DataFrame()
    return pd.DataFrame([audit[split]])


def accuracy_frame(metrics: Mapping[str, Any], configuration: str) -> pd.DataFrame:
    """Accuracy and both AUROCs (Sec. 6.1) per split from ``predict/metrics.json``."""
    rows = [
        {"configuration": configuration, "split": split, **values}
        for split, values in metrics.items()
        if not split.startswith("_")
    ]
    frame = pd.DataFrame(rows)
    for column in ("auroc_width", "auroc_low_probability"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def fit_frame(predictions: pd.DataFrame, prompts: pd.DataFrame, configuration: str) -> pd.DataFrame:
    """Table 10: mean E_m = sum_S |m_hat(S) - m(S)| and mean width error per split (App. D.3), for records
    with prescribed ``target_masses``; empty when the data has none (MedQA)."""
    if "target_masses" not in prompts.columns:
        return pd.DataFrame(columns=["configuration", "split", "n", "mass_error", "width_error"])
    import torch

    merged = predictions.merge(prompts[["record_id", "target_masses"]], on="record_id")
    rows = []
    for split, group in merged.groupby("split", sort=True):
        predicted = np.stack(group["masses"].to_numpy()).astype(np.float64)
        target = np.stack(group["target_masses"].to_numpy()).astype(np.float64)
        width_hat = credal_width(torch.from_numpy(predicted), validate=False).numpy()
        width = credal_width(torch.from_numpy(target), validate=False).numpy()
        rows.append(
            {
                "configuration": configuration,
                "split": split,
                "n": len(group),
                "mass_error": float(np.abs(predicted - target).sum(axis=1).mean()),
                "width_error": float(np.abs(width_hat - width).mean()),
            }
        )
    return pd.DataFrame(rows)


def _with_rule(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` plus a readable rule column (``<= 0.05``) from its direction and threshold."""
    rules = [f"{d} {t:g}" for d, t in zip(frame["direction"], frame["threshold"], strict=True)]
    return frame.assign(rule=pd.Series(rules, index=frame.index, dtype=object))


def gates_frame(gates: pd.DataFrame) -> pd.DataFrame:
    """The gates table from ``gates/gates.parquet`` (one row per split, template group and gate)."""
    return _with_rule(gates)


def verdicts_frame(checks: pd.DataFrame, gates: pd.DataFrame) -> pd.DataFrame:
    """Every check (``checks/checks.parquet``) and then every gate (``gates/gates.parquet``, group
    ``gates_<split>[_<templates>]``) with a readable rule beside its value and verdict."""
    as_checks = gates.assign(
        group=[verdict_group(s, g) for s, g in zip(gates["split"], gates["group"], strict=True)]
    )[list(checks.columns)]
    parts = [f for f in (checks, as_checks) if not f.empty]
    return _with_rule(pd.concat(parts, ignore_index=True) if parts else checks)
