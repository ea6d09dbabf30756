"""The layering, read from every import in the code (functions' own included): the library packages
(attribution, train, data, models) never import what stands above them (evaluation, reporting, tasks,
runs), the config schema imports only config schema (and the declarations and errors below it), and the
library sees no whole config (``xurs_pipeline/config.py``). Each rule fails on a planted import."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("attribution", "train", "data", "models")
ABOVE = ("evaluation", "reporting", "tasks", "runs", "config")  # config: the whole config's module
SCHEMA = ("attribution.variants",)  # the method entries' grammar, checked with the config
BELOW_SCHEMA = ("errors", "contracts", "io")  # what the schema may read besides itself


def sources(root: Path = ROOT) -> dict[str, str]:
    """Module name under ``xurs_pipeline`` (``attribution.config``) -> its source."""
    package = root / "xurs_pipeline"
    return {
        ".".join(p.relative_to(package).with_suffix("").parts).removesuffix(".__init__"): p.read_text()
        for p in package.rglob("*.py")
    }


def imports(source: str) -> Iterator[str]:
    """The project modules a source imports (``xurs_pipeline.`` dropped), anywhere in it."""
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        yield from (n.removeprefix("xurs_pipeline.") for n in names if n.startswith("xurs_pipeline."))


def is_schema(module: str) -> bool:
    return module == "config" or module.endswith(".config") or module in SCHEMA


def broken_rules(modules: Mapping[str, str]) -> list[str]:
    """``module -> imported`` for every import that breaks the layering."""
    found = []
    for module, source in modules.items():
        top = module.split(".")[0]
        for imported in imports(source):
            target = imported.split(".")[0]
            upward = top in LIBRARY and not is_schema(module) and target in ABOVE
            outside_schema = is_schema(module) and not (is_schema(imported) or target in BELOW_SCHEMA)
            if upward or outside_schema:
                found.append(f"{module} -> {imported}")
    return found


def test_the_library_imports_nothing_above_it_and_the_schema_only_schema() -> None:
    modules = sources()
    assert {"attribution.config", "attribution.variants", "evaluation.config", "config"} <= set(modules)
    assert broken_rules(modules) == []


def test_a_planted_upward_import_breaks_the_layering() -> None:
    modules = sources()
    lazy = "def page():\n    from xurs_pipeline.reporting.html import page\n"  # inside a function
    planted = {
        "attribution.planted": lazy,
        "train.planted": "import xurs_pipeline.runs.training\n",
        "data.planted": "from xurs_pipeline.config import RootConfig\n",
        "models.config": modules["models.config"] + "from xurs_pipeline.models.backbone import Backbone\n",
        "attribution.variants": modules["attribution.variants"] + "import xurs_pipeline.evaluation.swap\n",
    }
    assert sorted(broken_rules({**modules, **planted})) == [
        "attribution.planted -> reporting.html",
        "attribution.variants -> evaluation.swap",
        "data.planted -> config",
        "models.config -> models.backbone",
        "train.planted -> runs.training",
    ]
