"""Task ``check``: validate the whole composed config before any other stage runs (``xurs check``).

A misspelt key, a wrong type or a value out of range in ``params.yaml`` (e.g. from ``dvc exp run -S ...``)
fails here, naming the key, before any later stage deletes its outputs; so does an
``attribution.record_ids`` entry that names no prepared record (checked against the prepared prompts when
they were prepared for this ``data`` section, else against the records it describes; not before
``prepare`` for MedQA from the hub, whose records only ``prepare`` downloads). On success it writes
``<artifacts>/check.json``, whose content does not change with the config, so it invalidates nothing.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import yaml

from xurs_pipeline.attribution.variants import training_reads
from xurs_pipeline.config import ConfigError, RootConfig, load_params
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.config import SWAP_SOURCE
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
    check_selected_records(cfg)
    check_swap_references(cfg)
    print(f"{params}: valid (experiment {cfg.experiment_name}, config {config_hash(asdict(cfg))})")
    if cfg.attribution.ignored_note():
        print(f"{params}: {cfg.attribution.ignored_note()}")
    if stamp is not None:
        write_json({"valid": True}, stamp)
    return cfg


def check_selected_records(cfg: RootConfig) -> None:
    """ConfigError naming the ``attribution.record_ids`` entries that no prepared record has."""
    wanted = cfg.attribution.record_ids
    if not wanted:
        return
    from xurs_pipeline.data.dataset import current_prompts, load_records  # tokenizers: only when needed

    prepared = current_prompts(artifact("prompts").at(cfg.paths), cfg.data, ["record_id"])
    if prepared is not None:
        known, where = set(prepared["record_id"]), "the prepared prompts"
    elif cfg.data.source == "medqa" and cfg.data.medqa_hub:
        return  # known once prepare has downloaded them: the attribution stages refuse unknown ids
    else:
        known, where = {r.record_id for r in load_records(cfg.data)}, f"the {cfg.data.source} records"
    unknown = [r for r in wanted if r not in known]
    if unknown:
        raise ConfigError(
            f"attribution.record_ids: {unknown} not in {where} ({len(known)} records, e.g. "
            f"{sorted(known)[:3]}); use record ids of prepared/prompts.parquet"
        )


def check_swap_references(cfg: RootConfig) -> None:
    """ConfigError naming the ``evaluation.swap_methods`` entry whose ``references=train:k`` reads more
    training prompts than the two-cue data's training split holds (the prepared prompts' when prepared for
    this ``data`` section, else the records it describes), before the swap stage would find out."""
    reads = training_reads(cfg.evaluation.swap_methods)
    if cfg.data.source != SWAP_SOURCE or not reads:
        return
    from xurs_pipeline.data.dataset import current_prompts, load_records  # tokenizers: only when needed

    prepared = current_prompts(artifact("prompts").at(cfg.paths), cfg.data, ["split"])
    splits = list(prepared["split"]) if prepared is not None else [r.split for r in load_records(cfg.data)]
    held = splits.count("train")
    entry, wanted = max(reads.items(), key=lambda item: item[1])
    if wanted > held:
        raise ConfigError(
            f"evaluation.swap_methods: {entry!r} reads {wanted} training prompts; the training split of "
            f"{cfg.data.source} holds {held} (data.cases_per_family, data.families): use train:k with k <= "
            f"{held}"
        )


def run(cfg: RootConfig) -> None:
    """In process (:func:`~xurs_pipeline.tasks.pipeline.run_pipeline`): ``cfg`` is validated already."""
    check_selected_records(cfg)
    check_swap_references(cfg)
    write_json({"valid": True}, artifact("config_check").at(cfg.paths))


def main() -> int:
    """``python -m stages check``: exit status 0, or 2 with one line naming the bad key."""
    try:
        check_params(Path("params.yaml"), stamp_path())
    except (XursError, ValueError) as err:  # a bad config: one line naming the key, nothing else runs
        print(f"check: {err}", file=sys.stderr)
        return 2
    return 0
