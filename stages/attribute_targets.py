"""DVC stage ``attribute_targets``: the main attribution run (same engine, references, samples and seed)
for each comparison target function in ``evaluation.targets`` other than ``attribution.target_fn`` ->
``<artifacts>/targets/<fn>/`` and ``<artifacts>/targets/index.json``. ``mask_eval`` zero-masks each and the
``tables`` stage compares them with the width (the comparison the paper leaves to future work, Sec. 7).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from stages._common import run_stage
from stages.attribute import attribute_variants
from xurs_pipeline.config import RootConfig

TARGETS_DIR = "targets"


def comparison_targets(cfg: RootConfig) -> list[str]:
    """The target functions of ``evaluation.targets`` the main run does not explain."""
    return [fn for fn in cfg.evaluation.targets if fn != cfg.attribution.target_fn]


def target_config(cfg: RootConfig, fn: str) -> RootConfig:
    return dataclasses.replace(cfg, attribution=dataclasses.replace(cfg.attribution, target_fn=fn))


def body(cfg: RootConfig) -> None:
    variants = {fn: target_config(cfg, fn) for fn in comparison_targets(cfg)}
    attribute_variants(Path(cfg.paths.artifacts) / TARGETS_DIR, variants, "targets")


if __name__ == "__main__":
    run_stage("attribute_targets", body)
