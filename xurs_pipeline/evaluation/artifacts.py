"""Read the upstream artifacts evaluation needs, by the contracts of ARCHITECTURE.md, with clear errors.

Attributions: ``<dir>/attributions.parquet`` (schema ``attributions``, one row per (record_id, target))
and ``<dir>/coords/<coords_file>`` (safetensors: ``e`` (L, d) averaged coordinates and, with several
collections, ``e_collection_k``). Prompts: ``<artifacts>/prepared/prompts.parquet``. Predictions:
``<artifacts>/predict/predictions.parquet`` (``record_id``, ``masses``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from xurs_pipeline.contracts import artifact
from xurs_pipeline.evaluation.comparisons import RunRecord, token_magnitude
from xurs_pipeline.io import ArtifactError, read_parquet, read_safetensors

ATTRIBUTIONS, COORDS = artifact("attributions"), artifact("coords")
PROMPTS, PREDICTIONS = artifact("prompts"), artifact("predictions")
# Names inside a run directory (<artifacts>/attribute, or a comparison run).
ATTRIBUTIONS_FILE, COORDS_DIR = Path(ATTRIBUTIONS.path).name, Path(COORDS.path).name
# The columns evaluation uses: subsets of the declared ones (tests/foundation/test_foundation_contracts.py).
PROMPT_COLUMNS_USED = ("record_id", "split", "input_ids", "sections", "eligible", "answer_idx")
PREDICTION_COLUMNS_USED = ("record_id", "masses")


def read_attributions(directory: str | os.PathLike[str], config_hash: str = "") -> pd.DataFrame:
    """One run's attributions table, schema checked; with ``config_hash`` (the attribute stage's run
    fingerprint) also its config. Runs of other configs are read without it, to be compared."""
    return read_parquet(
        Path(directory) / ATTRIBUTIONS_FILE,
        ATTRIBUTIONS.provenance(config_hash),
        required_columns=ATTRIBUTIONS.columns,
    )


def read_prompts(path: str | os.PathLike[str], config_hash: str = "") -> pd.DataFrame:
    """The prepared prompts; with ``config_hash`` (of the ``data`` section) also their config."""
    return read_parquet(path, PROMPTS.provenance(config_hash), required_columns=PROMPT_COLUMNS_USED)


def read_predictions(path: str | os.PathLike[str]) -> pd.DataFrame:
    return read_parquet(path, PREDICTIONS.provenance(), required_columns=PREDICTION_COLUMNS_USED)


def prompts_by_id(prompts: pd.DataFrame, record_ids: list[str], what: str) -> pd.DataFrame:
    """Prompt rows for ``record_ids`` (indexed by record_id); raises naming ids the prompts lack."""
    indexed = prompts.set_index("record_id", drop=False)
    missing = sorted(set(record_ids) - set(indexed.index))
    if missing:
        raise ArtifactError(
            f"{what} explains records {missing[:5]} that are not in the prepared prompts: the attributions "
            f"were made from other prepared data. Rerun `dvc repro` from the prepare stage."
        )
    return indexed


def load_coords(directory: str | os.PathLike[str], coords_file: str, key: str = "e") -> np.ndarray:
    """Coordinate-level attributions (L, d) of one row, float64."""
    path = Path(directory) / COORDS_DIR / coords_file
    if not path.is_file():
        raise ArtifactError(f"{path}: missing coordinate file; rerun the attribute stage")
    tensors = read_safetensors(path, framework="np")
    if key not in tensors:
        raise ArtifactError(f"{path}: has tensors {sorted(tensors)}, not {key!r}")
    return tensors[key].astype(np.float64)


def collection_keys(directory: str | os.PathLike[str], coords_file: str) -> list[str]:
    """Names of the per-collection tensors (``e_collection_0``, ...) in one coordinate file, in order."""
    tensors = read_safetensors(Path(directory) / COORDS_DIR / coords_file, framework="np")
    keys = [k for k in tensors if k.startswith("e_collection_")]
    return sorted(keys, key=lambda k: int(k.rsplit("_", 1)[1]))


def run_records(
    frame: pd.DataFrame, prompts: pd.DataFrame, directory: str | os.PathLike[str] | None, key: str = "e"
) -> list[RunRecord]:
    """RunRecords of an attributions table: with ``directory``, the coordinate vectors ``coords/<file>[key]``
    and their token magnitudes (Sec. 3.4); without, the stored per-token signed sums and magnitudes."""
    by_id = prompts_by_id(prompts, list(frame["record_id"]), "attribution run")
    out = []
    for row in frame.itertuples(index=False):
        sections = tuple(by_id.loc[row.record_id, "sections"])
        if directory is None:
            signed = np.asarray(row.token_signed, dtype=np.float64)
            magnitude = np.asarray(row.token_magnitude, dtype=np.float64)
        else:
            signed = load_coords(directory, row.coords_file, key)
            magnitude = token_magnitude(signed)
        changed = tuple(int(i) for i in row.changed_positions)
        out.append(
            RunRecord(
                str(row.record_id),
                int(row.target),
                str(row.reference),
                magnitude,
                signed,
                float(row.width_input),
                sections,
                changed,
            )
        )
    return out
