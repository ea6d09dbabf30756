"""Headline metrics: the few numbers per stage that DVC shows (``dvc metrics show``, ``dvc exp show``).

Each stage writes its full metrics to a detail file (read by the tables, the report and people) and a
flat ``headline.json`` of a few numbers, declared as the stage's DVC metric. Key names are short
and unique across stages, so DVC's table (one column per key, the union over files) stays within 200
characters on the default experiment and ``dvc exp show --keep`` can name each column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

HEADLINE_FILE = "headline.json"


def _split(metrics: Mapping[str, Any], splits: Sequence[str]) -> str | None:
    """The split a headline reports: test if present, else the last of ``splits`` present."""
    present = [s for s in splits if s in metrics]
    return "test" if "test" in present else (present[-1] if present else None)


def predict_headline(
    metrics: Mapping[str, Mapping[str, Any]],
    splits: Sequence[str],
    audit: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Accuracy against chance (1/4) and both error-detection AUROCs (Sec. 6.1) of the test split, and
    the share of its predictions the correction rescaled (Table 8's column, from ``correction_audit``, where
    the correction applies), so that ``dvc exp show`` lists Table 8's sweep side by side."""
    split = _split(metrics, splits)
    if split is None:
        return {}
    m = metrics[split]
    headline = {
        "accuracy": m["accuracy"],
        "chance": m["chance"],
        "auroc_width": m["auroc_width"],
        "auroc_lowp": m["auroc_low_probability"],
    }
    if audit and audit.get(split, {}).get("correction_applies"):  # not for mass15 outputs (no correction)
        headline["rescaled"] = audit[split]["rescaling_pct"]  # % of predictions (short: dvc metrics show)
    return headline


def train_headline(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The selected epoch (its dev score is in the detail file with the per-epoch history)."""
    return {"best_epoch": summary["best_epoch"]}


def attribute_headline(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The completeness residual R (Eq. 9) over the explained questions, largest and median (App. B.4 bounds
    both), and how many questions' estimators ran out of budget before their tolerance (each named, with
    the R it reached, in the detail file and the report); with the stage's own rerun
    (``attribution.certified_rerun``) App. B.4's vector figures against it over the explained answers: the
    cosine's median and smallest (``cos_median``, ``cos_min``; >= 0.99) and the relative distance's median
    and largest (``dist_median``, ``dist_max``; <= 0.10), None where one is undefined."""
    exhausted = len(metrics.get("budget_exhausted", []))
    headline = {"R_max": metrics["residual_max"], "R_median": metrics["residual_median"]}
    headline["exhausted"] = exhausted
    if "rerun_answers" in metrics:
        headline |= {short: metrics[f"rerun_{name}"] for short, name in VECTOR_FIGURES.items()}
    return headline


# the attribute headline's vector figures -> their names in the stage's metrics.json (``rerun_<name>``)
VECTOR_FIGURES = {
    "cos_median": "cosine_median",
    "cos_min": "cosine_min",
    "dist_median": "distance_median",
    "dist_max": "distance_max",
}


def rerun_headline(checks: Sequence[Any], reruns: Sequence[str]) -> dict[str, float | None]:
    """App. B.4's vector criteria against a rerun (the ``attribute_repeats`` stage's runs named ``reruns``),
    from the ``checks`` stage's checks (``evaluation.verdicts.Check``): the smallest median cosine
    (``cos_rerun``, App. B.4: >= 0.99) and the largest median relative distance (``dist_rerun``, <= 0.10)
    over the reruns; {} without a rerun (nothing compared: no figure rather than a perfect one)."""
    groups = {f"values_main_vs_{name}" for name in reruns}
    picked: dict[str, list[float]] = {"median_cosine": [], "median_relative_distance": []}
    for check in checks:
        if check.group in groups and check.name in picked:
            picked[check.name].append(float(check.value))
    if not picked["median_cosine"]:
        return {}
    cos, dist = picked["median_cosine"], picked["median_relative_distance"]
    undefined = any(math.isnan(v) for v in cos + dist)  # undefined (a failed check): null, never hidden
    return {"cos_rerun": None if undefined else min(cos), "dist_rerun": None if undefined else max(dist)}


def mask_headline(targets: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Table 1's width row: mean zero-masking advantage A (Eq. 8) and its 95% bootstrap interval."""
    key = "width" if "width" in targets else next(iter(targets), None)
    if key is None:
        return {}
    t = targets[key]
    return {"advantage": t["mean_advantage"], "ci_low": t["ci_low"], "ci_high": t["ci_high"]}


def verdict_headline(kind: str, passed: Sequence[bool]) -> dict[str, int]:
    """How many ``kind`` (checks, gates) there are and how many failed: ``<kind>`` and ``<kind>_failed``
    (distinct names: DVC prefixes a key shared by two files with the file's path, a wide column)."""
    return {kind: len(passed), f"{kind}_failed": sum(not p for p in passed)}
