"""Task ``check``: validate the whole composed config before any other stage runs (``xurs check``).

A misspelt key, a wrong type or a value out of range in ``params.yaml`` (e.g. from ``dvc exp run -S ...``)
fails here, naming the key, before any later stage deletes its outputs. On success it writes
``<artifacts>/check.json``, whose content does not change with the config, so it invalidates nothing.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import yaml

from xurs_pipeline.config import RootConfig, load_params
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.medqa import require_medqa_dir
from xurs_pipeline.errors import XursError
from xurs_pipeline.io import config_hash, write_json


def stamp_path(params: Path = Path("params.yaml")) -> Path:
    """Where the stamp goes: ``check.json`` under ``paths.artifacts`` (``data`` when unreadable: the check
    itself then reports what is wrong with the file)."""
    try:
        paths = (yaml.safe_load(params.read_text()) or {}).get("paths") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        paths = {}
    return artifact("config_check").at({"artifacts": paths.get("artifacts", "data"), "results": ""})


def check_params(params: Path, stamp: Path | None) -> RootConfig:
    """Load and validate ``params`` (a :class:`~xurs_pipeline.config.ConfigError` names a bad key) and,
    for local MedQA data, that ``data.medqa_path`` holds its files; on success print one line and write
    the stamp."""
    cfg = load_params(params)
    if cfg.data.source == "medqa" and not cfg.data.medqa_hub:  # local MedQA: its files, before any stage
        require_medqa_dir(cfg.data.medqa_path, cfg.data.medqa_files)
    print(f"{params}: valid (experiment {cfg.experiment_name}, config {config_hash(asdict(cfg))})")
    if stamp is not None:
        write_json({"valid": True}, stamp)
    return cfg


def run(cfg: RootConfig) -> None:
    """In process (:func:`~xurs_pipeline.tasks.pipeline.run_pipeline`): ``cfg`` is validated already."""
    write_json({"valid": True}, artifact("config_check").at(cfg.paths))


def main() -> int:
    """``python -m stages.check``: exit status 0, or 2 with one line naming the bad key."""
    try:
        check_params(Path("params.yaml"), stamp_path())
    except (XursError, ValueError) as err:  # a bad config: one line naming the key, nothing else runs
        print(f"check: {err}", file=sys.stderr)
        return 2
    return 0
