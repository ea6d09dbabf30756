"""Read every evaluation artifact of one experiment and write all tables and plots under ``results/``.

``results/tables/<name>.{md,tex,csv}`` and ``results/plots/*.png``; each table carries the experiment
name and the hash of the composed config that produced it. Tables whose inputs an experiment does not
make (no aligned references -> no Table 3; MedQA -> no Table 10 and no gates table) are skipped and
listed in ``results/tables/index.json`` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.attribution.config import unread_keys
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.medqa import split_deviation
from xurs_pipeline.evaluation.artifacts import read_attributions, read_predictions, read_prompts
from xurs_pipeline.evaluation.evidence import localisation_by_target
from xurs_pipeline.evaluation.gate_results import GATE_COLUMNS
from xurs_pipeline.io import config_hash, read_json, read_parquet, write_json
from xurs_pipeline.reporting import plots, tables
from xurs_pipeline.reporting.render import TableSpec, write_table

# Table 4 and Table 5 rows: the settings the paper reports (operational keys such as cache paths left out).
TRAINING_KEYS = [
    "adaptation",
    "lora_rank",
    "lora_alpha",
    "lora_dropout",
    "lr_adapter",
    "lr_head",
    "weight_decay",
    "warmup_fraction",
    "max_epochs",
    "patience",
    "seed",
    "batch_size",
    "global_batch",
    "max_grad_norm",
    "set_loss_weight",
    "select_by",
]
ATTRIBUTION_KEYS = [
    "method",
    "reference",
    "reference_alignment",
    "result_filter",
    "route",
    "target",
    "n_collections",
    "refs_per_collection",
    "reference_order",
    "n_samples",
    "ig_quadrature",
    "ig_points",
    "ig_adaptive",
    "ig_tolerance",
    "ig_max_points",
    "kronrod_tolerance",
    "kronrod_max_evals",
    "kronrod_intervals",
    "seed",
    "samples_per_call",
    "precision",
    "max_questions",
]


def attribution_keys(params: Mapping[str, Any]) -> list[str]:
    """Table 5's rows: :data:`ATTRIBUTION_KEYS` but those the configured method never reads (another
    estimator's sample count or budget is no setting of this run)."""
    unread = set(unread_keys(params["attribution"]["method"]))
    return [key for key in ATTRIBUTION_KEYS if key not in unread]


def _optional_parquet(path: Path) -> pd.DataFrame | None:
    return read_parquet(path) if path.is_file() else None


@dataclass(frozen=True)
class Inputs:
    """One experiment's artifacts that the tables and plots read (``artifacts`` is their root)."""

    artifacts: Path
    prompts: pd.DataFrame
    predictions: pd.DataFrame
    attributions: pd.DataFrame
    mask_metrics: dict[str, Any]
    per_question: pd.DataFrame
    checks: pd.DataFrame
    gates: pd.DataFrame
    comparisons: list[pd.DataFrame]
    localisation: pd.DataFrame | None
    live: dict[str, Any] | None  # clue-free live positions per record; None without a known clue
    check_summary: dict[str, Any]
    endpoints: pd.DataFrame | None
    rerun_vectors: pd.DataFrame | None = None  # the attribute stage's own rerun (absent where it predates it)


def read_inputs(artifacts: Path) -> Inputs:
    """Read the experiment's artifacts (the optional checks details as None when absent)."""
    details = artifacts / "checks" / "details"
    live_frame = _optional_parquet(details / "live_positions.parquet")  # absent without a known clue
    return Inputs(
        artifacts,
        read_prompts(artifacts / "prepared" / "prompts.parquet"),
        read_predictions(artifacts / "predict" / "predictions.parquet"),
        read_attributions(artifacts / "attribute"),
        read_json(artifacts / "mask_eval" / "metrics.json"),
        read_parquet(artifacts / "mask_eval" / "per_question.parquet"),
        read_parquet(artifacts / "checks" / "checks.parquet"),
        read_parquet(artifacts / "gates" / "gates.parquet", required_columns=tuple(GATE_COLUMNS)),
        [read_parquet(p) for p in sorted(details.glob("compare_*.parquet"))],
        _optional_parquet(details / "localisation.parquet"),
        None
        if live_frame is None
        else dict(zip(live_frame["record_id"], live_frame["positions"], strict=True)),
        read_json(artifacts / "checks" / "checks.json"),
        _optional_parquet(details / "endpoints.parquet"),
        _optional_parquet(artifacts / artifact("rerun_vectors").path),
    )


Frames = dict[str, tuple[TableSpec, pd.DataFrame]]


def paper_frames(i: Inputs, params: Mapping[str, Any], label: str) -> Frames:
    """The paper's tables (1, 2, 4, 5, 10, the correction audit, fit, gates, verdicts, errors)."""
    comparisons = pd.concat(i.comparisons) if i.comparisons else None
    artifacts = i.artifacts
    return {
        "effects": (tables.EFFECTS, tables.effects_frame(i.mask_metrics, label)),
        "numerics": (tables.NUMERICS, tables.numerics_frame(i.attributions, comparisons)),
        "training": (tables.TRAINING, tables.settings_frame(params["train"], TRAINING_KEYS)),
        "attribution": (
            tables.ATTRIBUTION,
            tables.settings_frame(params["attribution"], attribution_keys(params)),
        ),
        "correction": (
            tables.CORRECTION,
            tables.correction_frame(read_json(artifacts / "predict" / "correction_audit.json")),
        ),
        "accuracy": (
            tables.ACCURACY,
            tables.accuracy_frame(read_json(artifacts / "predict" / "metrics.json"), label),
        ),
        "fit": (tables.FIT, tables.fit_frame(i.predictions, i.prompts, label)),
        "gates": (tables.GATES, tables.gates_frame(i.gates)),
        "verdicts": (tables.VERDICTS, tables.verdicts_frame(i.checks, i.gates)),
        "attribution_error": (
            tables.ATTRIBUTION_ERROR,
            tables.attribution_error_frame(i.attributions, i.rerun_vectors),
        ),
    }


def target_frames(i: Inputs, params: Mapping[str, Any]) -> Frames:
    """The comparison targets beside the width: Table 1 per target and where each finds the clue."""
    target_runs = [read_attributions(d) for d in sorted((i.artifacts / "targets").glob("*")) if d.is_dir()]
    every = pd.concat([i.attributions, *target_runs])
    ev = params["evaluation"]
    return {
        "targets": (tables.TARGETS, tables.targets_frame(i.mask_metrics, every, int(ev["top_k_max"]))),
        "target_localisation": (
            tables.TARGET_LOCALISATION,
            localisation_by_target(
                every,
                i.prompts,
                int(ev["bootstrap_resamples"]),
                float(ev["confidence"]),
                str(ev["bootstrap_method"]),
                int(ev["seed"]),
                i.live,
            ),
        ),
    }


def clue_frames(i: Inputs, label: str) -> Frames:
    """Endpoints (Table 3), localisation (Table 9), its summary and nulls, and the clue-window masking."""
    frames: Frames = {}
    if i.endpoints is not None and not i.endpoints.empty:
        frames["endpoints"] = (tables.ENDPOINTS, i.endpoints)
    if i.localisation is not None and "clue_share" in i.localisation.columns:
        measured = i.localisation.dropna(subset=["clue_share"])
        frames["localisation"] = (
            tables.LOCALISATION,
            measured.assign(clue_share_pct=100 * measured["clue_share"]),
        )
    summary = i.check_summary
    frames["localisation_summary"] = (
        tables.LOCALISATION_SUMMARY,
        tables.localisation_summary_frame(summary.get("localisation") or {}),
    )
    frames["clue_nulls"] = (
        tables.CLUE_NULLS,
        tables.clue_nulls_frame(summary.get("localisation_nulls") or {}),
    )
    frames["clue_masking"] = (tables.CLUE_MASKING, tables.clue_masking_frame(i.mask_metrics, label))
    return frames


def write_frames(frames: Frames, out_tables: Path, index: dict[str, Any], note: str) -> None:
    """Write every non-empty table; record each one's files, or why it was skipped, in ``index``."""
    for spec, frame in frames.values():
        if frame.empty:
            index["skipped"][spec.name] = "no rows in this experiment's artifacts"
            continue
        paths = write_table(frame, spec, out_tables, index["experiment"], index["config_hash"], note)
        index["tables"][spec.name] = [p.name for p in paths]


def explain_skips(index: dict[str, Any], gates: pd.DataFrame) -> None:
    """Replace the generic reason of tables that an experiment cannot make with the specific one."""
    if tables.CORRECTION.name in index["skipped"]:
        index["skipped"][tables.CORRECTION.name] = (
            "the classifier predicts the 15 masses directly (output_kind mass15): the App. A conversion and "
            "the Eq. 5 correction apply to belief heads only"
        )
    for spec in (
        tables.ENDPOINTS,
        tables.LOCALISATION,
        tables.LOCALISATION_SUMMARY,
        tables.CLUE_MASKING,
        tables.CLUE_NULLS,
    ):
        if spec.name not in index["tables"]:
            index["skipped"].setdefault(spec.name, "the experiment has no aligned references or clue tokens")
    if gates.empty:
        index["skipped"][tables.GATES.name] = (
            "the gates stage found no controlled-data predictions on evaluation.gate_splits (see gates.json)"
        )


def build_tables(artifacts: Path, results: Path, params: Mapping[str, Any], label: str) -> dict[str, Any]:
    """Write every table and plot this experiment's artifacts support; returns the index it writes.

    params: the composed config as a dict (settings tables, provenance hash); label: the configuration's
    row label (``xurs_pipeline.config.configuration_label``).
    """
    out_tables, out_plots = results / "tables", results / "plots"
    i = read_inputs(artifacts)
    frames = {**paper_frames(i, params, label), **target_frames(i, params), **clue_frames(i, label)}
    data = params["data"]
    note = split_deviation(data["source"], data["medqa_carve"], data["medqa_train_fraction"])
    index: dict[str, Any] = {
        "experiment": str(params.get("experiment_name", "?")),
        "config_hash": config_hash(params),
        "tables": {},
        "skipped": {},
    }
    index["deviations"] = [note] if note else []
    write_frames(frames, out_tables, index, note)
    explain_skips(index, i.gates)
    drawn = _plots(i.predictions, i.per_question, i.mask_metrics, i.attributions, out_plots)
    index["plots"] = [p.name for p in drawn.values() if p is not None]
    index["plots_not_drawn"] = {name: plots.NOT_DRAWN[name] for name, p in drawn.items() if p is None}
    for name in index["plots_not_drawn"]:  # no picture from an earlier run stands in for one not drawn
        (out_plots / f"{name}.png").unlink(missing_ok=True)
    write_json(index, out_tables / "index.json")
    return index


def _plots(
    predictions: pd.DataFrame,
    per_question: pd.DataFrame,
    mask_metrics: Mapping[str, Any],
    attributions: pd.DataFrame,
    out: Path,
) -> dict[str, Path | None]:
    """The report's five pictures by name (None: nothing to draw, ``plots.NOT_DRAWN`` says why): width by
    correctness, s, A(x) per question, top-k, R vs evaluations."""
    width = np.array([w[p] for w, p in zip(predictions["width"], predictions["predicted"], strict=True)])
    width_metric = mask_metrics["targets"].get("width", next(iter(mask_metrics["targets"].values())))
    curve = width_metric.get("curve", {})
    ks = np.array(sorted(int(k[1:]) for k in curve))
    rows = per_question[per_question["target_fn"] == "width"] if "target_fn" in per_question else per_question
    return {
        "width_by_correctness": plots.width_by_correctness(
            width, predictions["correct"].to_numpy(bool), out / "width_by_correctness.png"
        ),
        "surviving_total": plots.surviving_total(
            predictions["s"].to_numpy(float), out / "surviving_total.png"
        ),
        "advantage_per_question": plots.advantage_per_question(
            rows["advantage"].to_numpy(float),
            (width_metric["ci_low"], width_metric["ci_high"]),
            out / "advantage_per_question.png",
        ),
        "topk_curve": plots.topk_curve(
            ks,
            np.array([curve[f"k{k}"]["mean"] for k in ks]),
            np.array([curve[f"k{k}"]["low"] for k in ks]),
            np.array([curve[f"k{k}"]["high"] for k in ks]),
            out / "topk_curve.png",
        ),
        "residual_vs_evaluations": plots.residual_vs_evaluations(
            attributions["grad_evals"].to_numpy(float),
            attributions["residual"].to_numpy(float),
            out / "residual_vs_evaluations.png",
        ),
    }
