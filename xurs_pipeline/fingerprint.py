"""Content keys: what a cache or resume record depends on, by content rather than by config alone.

A :class:`ContentKey` names its parts (``config``: a config hash; ``classifier``: the SHA-256 of the
classifier directory; ``prompts``: of the prepared prompts file; ``code``: :func:`code_version`) and
hashes them together (:attr:`ContentKey.digest`). A record made under another digest is stale; comparing
the parts says which input changed (:meth:`ContentKey.changed`), for the log line that explains a
recomputation.

Code version: the SHA-256 of every ``xurs_pipeline/**/*.py`` and ``stages/*.py`` (relative path and
contents), computed once per process. Coarse on purpose: any source edit invalidates every cache, so a
change in code a stage imports indirectly can never be missed (a recomputation too many, never a stale
result).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of one file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_files(root: str | os.PathLike[str], paths: Iterable[Path]) -> str:
    """Hex SHA-256 over ``paths`` (sorted by their path relative to ``root``): each relative path and
    the SHA-256 of its contents, so renaming, adding or removing a file changes the hash too."""
    base = Path(root)
    digest = hashlib.sha256()
    for rel in sorted(Path(p).relative_to(base).as_posix() for p in paths):
        digest.update(f"{rel}\0{sha256_file(base / rel)}\n".encode())
    return digest.hexdigest()


def sha256_dir(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of every file under a directory (recursively; names starting with '.' skipped, which
    are the temporary files of atomic writes). A file gives its own :func:`sha256_file`."""
    root = Path(path)
    if root.is_file():
        return sha256_file(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such file or directory to hash")
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
    return sha256_files(root, files)


@lru_cache(maxsize=1)
def code_version() -> str:
    """Hex SHA-256 (16 digits) of the pipeline's source: ``xurs_pipeline/**/*.py`` and ``stages/*.py``."""
    package = Path(__file__).resolve().parent
    files = [p for p in package.rglob("*.py") if "__pycache__" not in p.parts]
    stages = package.parent / "stages"
    files += sorted(stages.glob("*.py")) if stages.is_dir() else []
    return sha256_files(package.parent, files)[:16]


@dataclass(frozen=True)
class ContentKey:
    """Named hashes of everything a cached record depends on; ``digest`` (16 hex digits) keys it."""

    parts: Mapping[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        text = json.dumps(dict(self.parts), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def changed(self, previous: Mapping[str, str]) -> list[str]:
        """Names of the parts that differ from ``previous`` (added and removed parts included)."""
        names = set(self.parts) | set(previous)
        return sorted(n for n in names if self.parts.get(n) != previous.get(n))
