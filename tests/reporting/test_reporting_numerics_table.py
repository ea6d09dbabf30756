"""Table 2 counts an undefined comparison as a failure (as `checks` does) instead of dropping it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from xurs_pipeline.reporting.tables import numerics_frame

ATTRIBUTIONS = pd.DataFrame(
    {"reference": ["train"] * 3, "method": ["eg"] * 3, "residual": [0.01, 0.03, 0.02]}
)


def comparisons(spearman: list[float], distance: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"reference": ["train"] * 3, "spearman": spearman, "relative_distance": distance})


def test_table2_medians_over_defined_comparisons():
    row = numerics_frame(ATTRIBUTIONS, comparisons([0.9, 0.99, 0.95], [0.1, 0.3, 0.2])).iloc[0]
    assert (row["residual"], row["spearman"], row["relative_distance"]) == pytest.approx((0.02, 0.95, 0.2))


def test_an_undefined_comparison_makes_the_table2_median_undefined():
    row = numerics_frame(ATTRIBUTIONS, comparisons([0.9, math.nan, 0.95], [0.1, 0.3, math.nan])).iloc[0]
    assert np.isnan(row["spearman"])  # nanmedian would show 0.925 and hide the failed comparison
    assert np.isnan(row["relative_distance"])
    assert row["residual"] == pytest.approx(0.02)
