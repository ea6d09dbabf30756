"""The bench/ scripts as modules, for the tests of their helpers (bench/ is not a package), and the rules
every script keeps: it imports no other script (shared plumbing lives in bench/_*.py modules, library logic
in xurs_pipeline) and patches nothing of the library (a setting a bench needs is a config key)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"
PATCHING = ("unittest.mock", "mock")  # modules whose import means a script patches something


def load_bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` imported under ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"{BENCH / name}.py: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def imported_modules(source: str) -> set[str]:
    """Every module a Python source imports, and what it imports from one: ``import a.b`` gives ``a.b``,
    ``from a import b`` gives ``a`` and ``a.b`` (b may be a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def rule_breaks(source: str, scripts: set[str]) -> list[str]:
    """What in one bench script's ``source`` breaks bench/'s rules: an import of another script of
    ``scripts`` (bench/*.py names without ``.py``; the ``_`` plumbing modules are allowed) or of a patching
    module (:data:`PATCHING`), or of a library module that does not exist (a module moved under it)."""
    modules = imported_modules(source)
    tops = {module.split(".")[0] for module in modules}
    breaks = [f"imports the bench script {top}" for top in sorted(tops & scripts) if not top.startswith("_")]
    breaks += [f"imports {module} (no such library module)" for module in sorted(_missing_library(modules))]
    breaks += [f"assigns {target} (patches the library)" for target in _library_assignments(source)]
    return breaks + [f"imports {module} (patches the library)" for module in sorted(modules & set(PATCHING))]


def _library_assignments(source: str) -> list[str]:
    """``name.attr = ...`` where ``name`` is a library module the script imported (``from xurs_pipeline.x
    import y`` or ``import xurs_pipeline.x as y``): a function swapped inside the library."""
    tree = ast.parse(source)
    library = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xurs_pipeline"):
            library |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            library |= {a.asname for a in node.names if a.asname and a.name.startswith("xurs_pipeline")}
    targets = [t for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets]
    return [
        f"{t.value.id}.{t.attr}"
        for t in targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in library
    ]


def _missing_library(modules: set[str]) -> set[str]:
    """The ``xurs_pipeline`` names of ``modules`` that are neither a module nor a name in their parent."""
    missing = set()
    for module in (m for m in modules if m.startswith("xurs_pipeline.")):
        parent, _, name = module.rpartition(".")
        if not _is_module(parent):
            missing.add(parent)
        elif not _is_module(module) and not hasattr(importlib.import_module(parent), name):
            missing.add(module)
    return missing


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a package above it is missing
        return False
