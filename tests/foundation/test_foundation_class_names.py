"""No two classes of the library share a name: a reader who meets ``Run`` or ``CheckLine`` in a traceback or a
type hint knows which one it is."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "xurs_pipeline"


def shared_class_names(sources: dict[str, str]) -> dict[str, list[str]]:
    """Class name -> the files (of ``sources``: file -> source) that define it at module level, for every
    name defined in more than one place."""
    where: dict[str, list[str]] = defaultdict(list)
    for name, source in sources.items():
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(name)
    return {cls: files for cls, files in where.items() if len(files) > 1}


def test_no_two_library_classes_share_a_name() -> None:
    sources = {str(p.relative_to(PACKAGE)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}
    assert len(sources) > 100
    assert shared_class_names(sources) == {}


def test_a_planted_twin_is_caught() -> None:
    sources = {
        "a.py": "class Run:\n    pass\n",
        "b.py": "class Run:\n    x = 1\n",
        "c.py": "class Other: ...\n",
    }
    assert shared_class_names(sources) == {"Run": ["a.py", "b.py"]}
