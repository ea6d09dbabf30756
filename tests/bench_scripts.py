"""The bench/ scripts as modules, for the tests of their helpers (bench/ is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` imported under ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"{BENCH / name}.py: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
