"""Checks with a value, a threshold and a pass/fail verdict (Tables 6 and 7, App. B.4 IG criteria).

Every check is a :class:`Check`; a NaN value (e.g. a Spearman correlation of a constant vector) fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.config import NumericsThresholds, RankingThresholds

Direction = Literal[">=", "<="]


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    value: float
    threshold: float
    direction: Direction
    n: int

    @property
    def passed(self) -> bool:
        if not np.isfinite(self.value):
            return False
        return self.value >= self.threshold if self.direction == ">=" else self.value <= self.threshold

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "passed": self.passed}


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (JSON has no NaN), recursively."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def checks_summary(checks: Sequence[Check]) -> dict[str, Any]:
    """JSON-ready ``{group: {name: {value, threshold, direction, n, passed}}}`` plus pass/fail counts."""
    groups: dict[str, dict[str, Any]] = {}
    for c in checks:
        groups.setdefault(c.group, {})[c.name] = {
            k: v for k, v in c.to_dict().items() if k not in ("group", "name")
        }
    passed = sum(c.passed for c in checks)
    return json_safe(
        {"n_checks": len(checks), "n_passed": passed, "n_failed": len(checks) - passed, "checks": groups}
    )


def checks_frame(checks: Sequence[Check]) -> pd.DataFrame:
    """One row per check: group, name, value, threshold, direction, n, passed."""
    columns = ["group", "name", "value", "threshold", "direction", "n", "passed"]
    return pd.DataFrame([c.to_dict() for c in checks], columns=columns)


def _column(frame: pd.DataFrame, name: str, group: str) -> np.ndarray:
    if name not in frame.columns:
        raise KeyError(f"{group}: comparison table has no column {name!r}; it has {list(frame.columns)}")
    values = frame[name].to_numpy(dtype=np.float64)
    if values.size == 0:
        raise ValueError(f"{group}: no comparisons to check for {name!r}")
    return values


def _agg(values: np.ndarray, how: str) -> float:
    """median / mean / max / min, NaN-propagating (a NaN entry makes the check fail)."""
    return float({"median": np.median, "mean": np.mean, "max": np.max, "min": np.min}[how](values))


def _check(
    group: str, name: str, values: np.ndarray, how: str, threshold: float, direction: Direction
) -> Check:
    return Check(group, name, _agg(values, how), threshold, direction, int(values.size))


def residual_checks(residuals: np.ndarray, th: NumericsThresholds, group: str) -> list[Check]:
    """Completeness (Eq. 9): centre (median for EG, mean per reference for IG) and maximum residual."""
    r = np.asarray(residuals, dtype=np.float64).reshape(-1)
    if r.size == 0:
        raise ValueError(f"{group}: no completeness residuals to check")
    return [
        _check(
            group, f"{th.residual_aggregate}_residual", r, th.residual_aggregate, th.residual_center_max, "<="
        ),
        _check(group, "max_residual", r, "max", th.max_residual_max, "<="),
    ]


def numerics_checks(comparisons: pd.DataFrame, th: NumericsThresholds, group: str) -> list[Check]:
    """Table 7 / IG criteria on a :func:`compare_runs` table (one row per question)."""
    overlap = f"overlap_top{th.topk}"
    return [
        _check(
            group,
            "median_spearman",
            _column(comparisons, "spearman", group),
            "median",
            th.median_spearman_min,
            ">=",
        ),
        _check(
            group,
            f"median_{overlap}",
            _column(comparisons, overlap, group),
            "median",
            th.median_topk_overlap_min,
            ">=",
        ),
        _check(
            group,
            "median_cosine",
            _column(comparisons, "cosine", group),
            "median",
            th.median_cosine_min,
            ">=",
        ),
        _check(
            group,
            "median_relative_distance",
            _column(comparisons, "relative_distance", group),
            "median",
            th.median_relative_distance_max,
            "<=",
        ),
    ]


def ranking_checks(comparisons: pd.DataFrame, th: RankingThresholds, group: str) -> list[Check]:
    """Table 6 on a :func:`compare_runs` table with section metrics (one row per question and target)."""
    overlap = f"overlap_top{th.topk}"
    return [
        _check(
            group,
            "median_section_spearman",
            _column(comparisons, "section_spearman", group),
            "median",
            th.median_section_spearman_min,
            ">=",
        ),
        _check(
            group,
            "top_option_agreement",
            _column(comparisons, "top_option_agree", group),
            "mean",
            th.top_option_agreement_min,
            ">=",
        ),
        _check(
            group,
            f"mean_{overlap}",
            _column(comparisons, overlap, group),
            "mean",
            th.mean_topk_overlap_min,
            ">=",
        ),
        _check(
            group,
            "median_share_difference",
            _column(comparisons, "share_difference", group),
            "median",
            th.median_share_difference_max,
            "<=",
        ),
        _check(
            group,
            "max_width_difference",
            _column(comparisons, "width_difference", group),
            "max",
            th.max_width_difference_max,
            "<=",
        ),
    ]
