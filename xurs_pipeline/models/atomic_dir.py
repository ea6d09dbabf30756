"""Atomic directory writes: build a directory under a temporary name, swap it in only on success."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from xurs_pipeline.io import ordinary_mode, unwritable


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temporary directory beside ``path``; on success it replaces ``path``.

    On failure the temporary directory is removed and an existing ``path`` is left untouched, so a
    reader never sees a half-written directory under the final name.
    """
    final = Path(path)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    except OSError as err:
        raise unwritable(final, err) from err
    ordinary_mode(tmp, directory=True)
    old = final.parent / f".{final.name}.old"
    try:
        yield tmp
        if old.exists():
            shutil.rmtree(old)
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
        if old.exists():
            shutil.rmtree(old)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
