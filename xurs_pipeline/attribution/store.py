"""Per-question part files: the unit of sharding, atomic writes and resume.

Each finished question is committed as ``parts/<stem>.parquet`` (its rows) or ``parts/<stem>.failed.json``
(a non-finite report), written atomically after its coordinate files under ``parts/coords/``. The
provenance header carries the run's content key (``fingerprint.ContentKey.digest``: the config, the
SHA-256 of the classifier directory and of the prepared prompts, the code version), so parts of another
run are never mistaken for finished work: they are recomputed and overwritten. ``parts/key.json`` keeps
the key's parts, so the log says which input changed. Coordinate files carry a SHA-256 checksum, checked
before a part counts as finished: a damaged part is recomputed, never merged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from xurs_pipeline.attribution.question import QuestionResult
from xurs_pipeline.attribution.records import COLUMNS, NonFiniteReport, provenance, record_stem
from xurs_pipeline.fingerprint import ContentKey
from xurs_pipeline.io import (
    ArtifactError,
    Provenance,
    read_json,
    read_parquet,
    verify_checksum,
    write_json,
    write_parquet,
    write_safetensors,
)

FAILURE_SCHEMA = "attribution_failure"
KEY_FILE = "key.json"
log = logging.getLogger("xurs")


class PartStore:
    """Finished questions of one run under ``root`` (``root/parts``), keyed by record id."""

    def __init__(
        self, root: str | os.PathLike[str], fingerprint: str, key_parts: Mapping[str, str] | None = None
    ) -> None:
        """``fingerprint``: the content key's digest stamped on every part; ``key_parts``: its named
        parts (written to ``parts/key.json`` by :meth:`note_key`)."""
        self.root = Path(root)
        self.parts = self.root / "parts"
        self.coords = self.parts / "coords"
        self.fingerprint = fingerprint
        self.key_parts = dict(key_parts or {})
        self._key_changed = False

    def note_key(self) -> list[str]:
        """Compare this run's key with the one the existing parts were made under; log which inputs
        changed (their parts are recomputed), record this run's key. Returns the changed part names."""
        path = self.parts / KEY_FILE
        changed: list[str] = []
        if path.is_file():
            try:
                previous = read_json(path, Provenance("attribution_key", 1))
            except ArtifactError:
                previous = {}
            previous.pop("_provenance", None)
            if previous.get("digest") != self.fingerprint:
                old = previous.get("parts", {})
                changed = ContentKey(self.key_parts).changed(old)
                self._key_changed = True
                log.warning(
                    "attribute: finished questions in %s were made under other inputs (%s changed): "
                    "recomputing them",
                    self.parts,
                    ", ".join(changed) or "content key",
                )
        payload = {"digest": self.fingerprint, "parts": self.key_parts}
        write_json(payload, path, Provenance("attribution_key", 1, self.fingerprint))
        return changed

    def _rows_path(self, record_id: str) -> Path:
        return self.parts / f"{record_stem(record_id)}.parquet"

    def _failed_path(self, record_id: str) -> Path:
        return self.parts / f"{record_stem(record_id)}.failed.json"

    def _failure_provenance(self) -> Provenance:
        return Provenance(FAILURE_SCHEMA, 1, self.fingerprint)

    def done(self, record_id: str) -> bool:
        """Whether ``record_id`` was finished by a run with this fingerprint (stale or damaged parts do
        not count; a damaged one is logged)."""
        try:
            self.read(record_id)
        except ArtifactError as err:
            exists = self._rows_path(record_id).is_file() or self._failed_path(record_id).is_file()
            if exists and not self._key_changed:
                log.warning("attribute: recomputing %s: %s", record_id, err)
            return False
        return True

    def write(self, record_id: str, result: QuestionResult) -> None:
        """Commit one question: coordinates first, then its rows (or failure) as the commit marker."""
        if result.failure is not None:
            write_json(vars(result.failure), self._failed_path(record_id), self._failure_provenance())
            return
        for row in result.rows:
            meta = {"record_id": row.record_id, "target": str(row.target)}
            write_safetensors(row.coords, self.coords / row.coords_file, meta)
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
            for name in frame["coords_file"]:
                verify_checksum(self.coords / name)
            return frame, None
        if failed_path.is_file():
            payload = read_json(failed_path, self._failure_provenance())
            payload.pop("_provenance", None)
            return None, NonFiniteReport(**payload)
        raise ArtifactError(f"record {record_id}: no finished part under {self.parts}")
