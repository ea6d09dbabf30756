"""Per-question part files: the unit of sharding, atomic writes and resume.

Each finished question is committed as ``parts/<stem>.parquet`` (its rows) or ``parts/<stem>.failed.json``
(a non-finite report), written atomically after its coordinate files under ``parts/coords/``. The
provenance header carries the run fingerprint (config + model + data), so parts of another run are
never mistaken for finished work: they are recomputed and overwritten.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from safetensors.torch import save_file

from xurs_pipeline.attribution.question import QuestionResult
from xurs_pipeline.attribution.records import COLUMNS, NonFiniteReport, provenance, record_stem
from xurs_pipeline.io import (
    ArtifactError,
    Provenance,
    atomic_path,
    read_json,
    read_parquet,
    write_json,
    write_parquet,
)

FAILURE_SCHEMA = "attribution_failure"


class PartStore:
    """Finished questions of one run under ``root`` (``root/parts``), keyed by record id."""

    def __init__(self, root: str | os.PathLike[str], fingerprint: str) -> None:
        self.root = Path(root)
        self.parts = self.root / "parts"
        self.coords = self.parts / "coords"
        self.fingerprint = fingerprint

    def _rows_path(self, record_id: str) -> Path:
        return self.parts / f"{record_stem(record_id)}.parquet"

    def _failed_path(self, record_id: str) -> Path:
        return self.parts / f"{record_stem(record_id)}.failed.json"

    def _failure_provenance(self) -> Provenance:
        return Provenance(FAILURE_SCHEMA, 1, self.fingerprint)

    def done(self, record_id: str) -> bool:
        """Whether ``record_id`` was finished by a run with this fingerprint (stale parts do not count)."""
        try:
            self.read(record_id)
        except ArtifactError:
            return False
        return True

    def write(self, record_id: str, result: QuestionResult) -> None:
        """Commit one question: coordinates first, then its rows (or failure) as the commit marker."""
        if result.failure is not None:
            write_json(vars(result.failure), self._failed_path(record_id), self._failure_provenance())
            return
        for row in result.rows:
            with atomic_path(self.coords / row.coords_file) as tmp:
                meta = {"record_id": row.record_id, "target": str(row.target)}
                save_file(row.coords, str(tmp), metadata=meta)
        frame = pd.DataFrame([row.to_row() for row in result.rows], columns=list(COLUMNS))
        write_parquet(frame, self._rows_path(record_id), provenance(self.fingerprint), COLUMNS)
        self._failed_path(record_id).unlink(missing_ok=True)

    def read(self, record_id: str) -> tuple[pd.DataFrame | None, NonFiniteReport | None]:
        """(rows, None) or (None, failure); ArtifactError when missing or from another run."""
        rows_path, failed_path = self._rows_path(record_id), self._failed_path(record_id)
        if rows_path.is_file():
            frame = read_parquet(rows_path, provenance(self.fingerprint), COLUMNS)
            missing = [f for f in frame["coords_file"] if not (self.coords / f).is_file()]
            if missing:
                raise ArtifactError(f"{rows_path}: coordinate files {missing} are missing; recompute")
            return frame, None
        if failed_path.is_file():
            payload = read_json(failed_path, self._failure_provenance())
            payload.pop("_provenance", None)
            return None, NonFiniteReport(**payload)
        raise ArtifactError(f"record {record_id}: no finished part under {self.parts}")
