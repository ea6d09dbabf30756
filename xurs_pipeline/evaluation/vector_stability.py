"""App. B.4's vector criteria of the attribute stage against its own rerun (``attribution.certified_rerun``):
per explained answer the cosine similarity e . e' / (|e| |e'|) and the relative Euclidean distance
|e - e'| / |e'| of the main run's coordinate-level vector e (L, d) and the rerun's e', computed by
:func:`~xurs_pipeline.evaluation.comparisons.compare_runs` (the comparison the checks stage makes against
``attribute_repeats``), and their median and worst case over the answers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from xurs_pipeline.contracts import RERUN_VECTOR_COLUMNS
from xurs_pipeline.evaluation.artifacts import read_attributions, run_records
from xurs_pipeline.evaluation.comparisons import compare_runs


def rerun_vectors(main_dir: Path, rerun_dir: Path, prompts: pd.DataFrame) -> pd.DataFrame:
    """One row per explained answer (``contracts.RERUN_VECTOR_COLUMNS``): the cosine and relative distance
    (relative to the rerun's vector) of the coordinate vectors in ``main_dir/coords`` and
    ``rerun_dir/coords``; NaN where one is undefined (an all-zero vector). RunMismatchError unless both
    explain the same answers."""
    main, rerun = (run_records(read_attributions(d), prompts, d) for d in (main_dir, rerun_dir))
    table = compare_runs(main, rerun, names=("main", "rerun")).rename(columns={"c": "target"})
    return table[list(RERUN_VECTOR_COLUMNS)].reset_index(drop=True)


def vector_figures(vectors: pd.DataFrame) -> dict[str, float | None]:
    """The median and worst over the answers of the cosine (``cosine_median``, ``cosine_min``; App. B.4:
    >= 0.99) and of the relative distance (``distance_median``, ``distance_max``; <= 0.10). An undefined
    value (or no answer) makes every figure None: a failure, never hidden."""
    cosine = vectors["cosine"].to_numpy(dtype=float)
    distance = vectors["relative_distance"].to_numpy(dtype=float)
    defined = len(vectors) > 0 and not (np.isnan(cosine).any() or np.isnan(distance).any())

    def figure(values: np.ndarray, how: str) -> float | None:
        return float(getattr(np, how)(values)) if defined else None

    return {
        "cosine_median": figure(cosine, "median"),
        "cosine_min": figure(cosine, "min"),
        "distance_median": figure(distance, "median"),
        "distance_max": figure(distance, "max"),
    }


def vector_metrics(vectors: pd.DataFrame) -> dict[str, float | int | None]:
    """The attribute stage's metrics of its rerun: ``rerun_answers`` compared and ``rerun_<figure>`` of
    each of :func:`vector_figures`."""
    return {"rerun_answers": len(vectors), **{f"rerun_{k}": v for k, v in vector_figures(vectors).items()}}
