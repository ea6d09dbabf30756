"""Task ``attribute_targets``: the main attribution run (same engine, references, samples and seed)
for each comparison target function in ``evaluation.targets`` other than ``attribution.target_fn`` ->
``<artifacts>/targets/<fn>/`` and ``<artifacts>/targets/index.json``. ``mask_eval`` zero-masks each and the
``tables`` stage compares them with the width (the comparison the paper leaves to future work, Sec. 7).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.tasks.attribute import attribute_variants


def comparison_targets(cfg: RootConfig) -> list[str]:
    """The target functions of ``evaluation.targets`` the main run does not explain."""
    return [fn for fn in cfg.evaluation.targets if fn != cfg.attribution.target_fn]


def target_config(cfg: RootConfig, fn: str) -> RootConfig:
    return dataclasses.replace(cfg, attribution=dataclasses.replace(cfg.attribution, target_fn=fn))


def target_dir(cfg: RootConfig, fn: str) -> Path:
    return artifact("target_runs").at(cfg.paths) / fn


def run(cfg: RootConfig) -> None:
    variants = {fn: target_config(cfg, fn) for fn in comparison_targets(cfg)}
    attribute_variants(artifact("target_runs").at(cfg.paths), variants, "targets")
