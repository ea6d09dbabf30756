"""Schema-checked, atomic artifact I/O (Parquet and JSON).

Every artifact carries a small provenance header: the schema name and version that shaped it and
the hash of the config section that made it. Readers check both, so a stage never silently consumes
an artifact written under another schema or another config. Writes go to a temporary file in the
target directory followed by ``os.replace``: an interrupted run never leaves a half-written file
under the final name. Parquet pages carry CRC checksums, verified on read, so flipped bytes are
detected, not read as other numbers; safetensors files (checkpoints, coordinates) are read through
:func:`read_safetensors`, which turns a truncated or corrupt file into an :class:`ArtifactError`.
Safetensors files written by :func:`write_safetensors` (caches, coordinates) carry the SHA-256 of their
tensor bytes in their metadata (``xurs_sha256``), checked by :func:`read_safetensors`, and a header
with sorted metadata keys, so the same tensors always give the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from safetensors import SafetensorError, safe_open

from xurs_pipeline.errors import XursError

if TYPE_CHECKING:
    import torch

PROVENANCE_KEY = b"xurs_provenance"
CHECKSUM_KEY = "xurs_sha256"  # safetensors metadata: hex SHA-256 of the tensor bytes


class ArtifactError(XursError, RuntimeError):
    """An artifact is missing, corrupt, or was made under another schema or config."""


@dataclass(frozen=True)
class Provenance:
    """Who made an artifact: schema name/version and the hash of the config that produced it."""

    schema: str
    schema_version: int
    config_hash: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {"schema": self.schema, "schema_version": self.schema_version, "config_hash": self.config_hash}
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Provenance:
        raw = json.loads(text)
        return cls(str(raw["schema"]), int(raw["schema_version"]), str(raw.get("config_hash", "")))


def config_hash(section: Any) -> str:
    """Stable short hash of a (JSON-serialisable) config section: sorted keys, 16 hex digits."""
    text = json.dumps(section, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ordinary_mode(path: str | os.PathLike[str], directory: bool = False) -> None:
    """Give a temporary file (``mkstemp``: 0600) or directory (``mkdtemp``: 0700) the mode an ordinary
    ``open``/``mkdir`` would (0666/0777 less the umask), so results are readable by others as usual."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, (0o777 if directory else 0o666) & ~mask)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.

    A directory that cannot be written (read-only, not a directory) raises ArtifactError naming it. The file
    gets the ordinary mode (0644 under the usual umask 022), not ``mkstemp``'s 0600.
    """
    final = Path(path)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    except OSError as err:
        raise unwritable(final, err) from err
    os.close(fd)
    tmp = Path(tmp_name)
    ordinary_mode(tmp)
    try:
        yield tmp
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


def unwritable(path: Path, err: OSError) -> ArtifactError:
    """The error for an output that cannot be created (read-only directory, a file in the way...)."""
    return ArtifactError(
        f"{path}: cannot write into {path.parent} ({err.strerror or err}); make the directory writable "
        "or point paths.artifacts / paths.results elsewhere"
    )


def _check_provenance(path: Path, found: Provenance | None, expected: Provenance | None) -> None:
    if expected is None:
        return
    if found is None:
        raise ArtifactError(f"{path}: no provenance header; it was not written by xurs_pipeline. Rebuild it.")
    if (found.schema, found.schema_version) != (expected.schema, expected.schema_version):
        raise ArtifactError(
            f"{path}: schema {found.schema!r} v{found.schema_version}, expected {expected.schema!r} "
            f"v{expected.schema_version}. Rebuild it with `dvc repro` (or `dvc repro --force <stage>`)."
        )
    if expected.config_hash and found.config_hash != expected.config_hash:
        raise ArtifactError(
            f"{path} ({found.schema} v{found.schema_version}): made under config hash {found.config_hash}, "
            f"but the current config hashes to "
            f"{expected.config_hash}. The inputs are stale: {_rerun(expected.schema)}."
        )


def _rerun(schema: str) -> str:
    """How to remake an artifact of ``schema`` under the current config. ``--force``: DVC may count its
    stage up to date (the artifact was made outside DVC, e.g. ``python -m stages train train.seed=17``, or
    restored by ``dvc checkout`` / ``dvc exp apply``), and a plain ``dvc repro`` would refuse again."""
    from xurs_pipeline.contracts import ARTIFACTS  # contracts imports this module

    writers = sorted({a.writer for a in ARTIFACTS.values() if a.schema == schema})
    if len(writers) != 1:
        return "rerun the stage that made it (`dvc repro --force --single-item <stage>`, then `dvc repro`)"
    return f"rerun its stage: `dvc repro --force --single-item {writers[0]}`, then `dvc repro`"


def write_parquet(
    frame: pd.DataFrame,
    path: str | os.PathLike[str],
    provenance: Provenance,
    required_columns: Sequence[str] = (),
) -> Path:
    """Write ``frame`` atomically with a provenance header; refuse frames missing required columns."""
    missing = [c for c in required_columns if c not in frame.columns]
    if missing:
        raise ArtifactError(f"{path}: refusing to write, missing columns {missing}")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[PROVENANCE_KEY] = provenance.to_json().encode()
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, write_page_checksum=True)
    return Path(path)


def read_parquet(
    path: str | os.PathLike[str],
    expected: Provenance | None = None,
    required_columns: Sequence[str] = (),
) -> pd.DataFrame:
    """Read a Parquet artifact, checking that it is intact, its provenance, and its columns."""
    p = Path(path)
    if not p.is_file():
        raise ArtifactError(f"{p}: missing artifact. Run the stage that makes it (`dvc repro`).")
    try:
        table = pq.read_table(p, page_checksum_verification=True)
    except (pa.ArrowInvalid, OSError) as err:
        raise ArtifactError(f"{p}: corrupt or truncated Parquet file ({err}). Delete it and rerun.") from err
    raw = (table.schema.metadata or {}).get(PROVENANCE_KEY)
    _check_provenance(p, Provenance.from_json(raw) if raw else None, expected)
    missing = [c for c in required_columns if c not in table.column_names]
    if missing:
        raise ArtifactError(f"{p}: missing columns {missing}; has {table.column_names}")
    return table.to_pandas()


def read_provenance(path: str | os.PathLike[str]) -> Provenance | None:
    """The provenance header of a Parquet or JSON artifact, or None if it has none."""
    p = Path(path)
    if p.suffix == ".json":
        payload = read_json(p)
        raw = payload.get("_provenance") if isinstance(payload, Mapping) else None
        return Provenance(**raw) if raw else None
    raw = (pq.read_schema(p).metadata or {}).get(PROVENANCE_KEY)
    return Provenance.from_json(raw) if raw else None


def write_json(
    payload: Mapping[str, Any], path: str | os.PathLike[str], provenance: Provenance | None = None
) -> Path:
    """Write a JSON object atomically (sorted keys, indented); embed provenance under ``_provenance``."""
    body = dict(payload)
    if provenance is not None:
        body["_provenance"] = json.loads(provenance.to_json())
    text = json.dumps(body, indent=2, sort_keys=True, allow_nan=False, default=_json_default)
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n")
    return Path(path)


def read_json(path: str | os.PathLike[str], expected: Provenance | None = None) -> dict[str, Any]:
    """Read a JSON artifact; a missing, truncated or non-object file raises ``ArtifactError``."""
    p = Path(path)
    if not p.is_file():
        raise ArtifactError(f"{p}: missing artifact. Run the stage that makes it (`dvc repro`).")
    try:
        payload = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ArtifactError(f"{p}: corrupt or truncated JSON ({err}). Delete it and rerun.") from err
    if not isinstance(payload, dict):
        raise ArtifactError(f"{p}: expected a JSON object, found {type(payload).__name__}")
    raw = payload.get("_provenance")
    _check_provenance(p, Provenance(**raw) if raw else None, expected)
    return payload


def write_safetensors(
    tensors: Mapping[str, torch.Tensor],
    path: str | os.PathLike[str],
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write tensors atomically with ``metadata`` plus the SHA-256 of the tensor bytes (``xurs_sha256``).

    The header's metadata keys are sorted (safetensors itself writes them in a random order per
    process), so equal tensors and metadata give byte-identical files.
    """
    import safetensors.torch  # lazy: it imports torch, which config validation must not need

    raw = safetensors.torch.save({k: v.contiguous() for k, v in tensors.items()})
    size = int.from_bytes(raw[:8], "little")
    data = memoryview(raw)[8 + size :]
    header = json.loads(raw[8 : 8 + size])
    header.pop("__metadata__", None)
    meta = {**dict(metadata or {}), CHECKSUM_KEY: hashlib.sha256(data).hexdigest()}
    text = json.dumps(
        {"__metadata__": dict(sorted(meta.items())), **header}, separators=(",", ":"), ensure_ascii=False
    ).encode()
    text += b" " * (-len(text) % 8)  # safetensors aligns the tensor data to 8 bytes
    with atomic_path(path) as tmp, tmp.open("wb") as handle:
        handle.write(len(text).to_bytes(8, "little"))
        handle.write(text)
        handle.write(data)
    return Path(path)


def read_safetensors(path: str | os.PathLike[str], framework: str = "pt") -> dict[str, Any]:
    """All tensors of a safetensors file (``framework`` ``pt``: torch, ``np``: numpy).

    A missing, truncated or corrupt file (header, sizes), or one whose tensor bytes differ from its
    ``xurs_sha256`` checksum, raises ``ArtifactError`` naming it.
    """
    p = _existing_tensor_file(path)
    verify_checksum(p)
    try:
        with safe_open(str(p), framework=framework) as handle:
            return {key: handle.get_tensor(key) for key in handle.keys()}  # noqa: SIM118 (not a dict)
    except (SafetensorError, OSError, ValueError) as err:
        raise _corrupt_tensors(p, err) from err


def verify_checksum(path: str | os.PathLike[str]) -> bool:
    """Check a safetensors file's tensor bytes against its ``xurs_sha256`` metadata (reads the file).

    Returns False for a file without a checksum (written elsewhere); ArtifactError on a mismatch.
    """
    p = _existing_tensor_file(path)
    try:
        with safe_open(str(p), framework="np") as handle:
            expected = (handle.metadata() or {}).get(CHECKSUM_KEY)
    except (SafetensorError, OSError, ValueError) as err:
        raise _corrupt_tensors(p, err) from err
    if expected is None:
        return False
    digest = hashlib.sha256()
    with p.open("rb") as handle:
        handle.seek(8 + int.from_bytes(handle.read(8), "little"))
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        raise ArtifactError(
            f"{p}: tensor bytes do not match the file's SHA-256 checksum (damaged on disk). "
            "Delete it and rerun."
        )
    return True


def check_safetensors(path: str | os.PathLike[str]) -> None:
    """Check a safetensors file's header and size without reading its tensors (large weights)."""
    p = _existing_tensor_file(path)
    try:
        with safe_open(str(p), framework="np"):
            pass
    except (SafetensorError, OSError, ValueError) as err:
        raise _corrupt_tensors(p, err) from err


def _existing_tensor_file(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.is_file():
        raise ArtifactError(f"{p}: missing tensor file. Run the stage that makes it (`dvc repro`).")
    return p


def _corrupt_tensors(path: Path, err: Exception) -> ArtifactError:
    return ArtifactError(f"{path}: corrupt or truncated safetensors file ({err}). Delete it and rerun.")


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
