"""DVC stage ``check``: validate the whole composed config before any other stage runs (``xurs check``).

A misspelt key, a wrong type or a value out of range in ``params.yaml`` (e.g. from ``dvc exp run -S ...``)
fails here, naming the key, before any later stage deletes its outputs. On success it writes
``<artifacts>/check.json``, whose content does not change with the config, so it invalidates nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from xurs_pipeline.commands.check import run
from xurs_pipeline.contracts import artifact


def stamp_path(params: Path = Path("params.yaml")) -> Path:
    """Where the stamp goes: ``check.json`` under ``paths.artifacts`` (``data`` when unreadable: the check
    itself then reports what is wrong with the file)."""
    try:
        paths = (yaml.safe_load(params.read_text()) or {}).get("paths") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        paths = {}
    return artifact("config_check").at({"artifacts": paths.get("artifacts", "data"), "results": ""})


if __name__ == "__main__":
    from xurs_pipeline.errors import XursError

    try:
        sys.exit(run(argparse.Namespace(params="params.yaml", stamp=str(stamp_path()))))
    except (XursError, ValueError) as err:  # a bad config: one line naming the key, nothing else runs
        print(f"check: {err}", file=sys.stderr)
        sys.exit(2)
