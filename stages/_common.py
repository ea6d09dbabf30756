"""The one entry-point wrapper every stage uses: Hydra loads ``params.yaml``, we validate it, then run.

``python -m stages.<name>`` reads the composed ``params.yaml`` (what DVC tracks); Hydra command-line
overrides (``train.seed=17``) and multirun (``-m train.seed=7,17,23``) work as usual. Hydra's run
directories hold logs only (``logs/hydra/<stage>/...``); artifacts go to the fixed paths in
``cfg.paths``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path

import hydra
import yaml
from omegaconf import DictConfig

from xurs_pipeline.config import ConfigError, RootConfig, validate

REPO_ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("xurs")


def run_stage(name: str, body: Callable[[RootConfig], None]) -> None:
    """Run ``body(cfg)`` as the Hydra entry point of stage ``name`` (call it under ``__main__``)."""
    params_dir = Path.cwd()
    if not (params_dir / "params.yaml").is_file():
        sys.exit(f"stage {name}: no params.yaml in {params_dir}. Run stages from the project root.")
    try:
        yaml.safe_load((params_dir / "params.yaml").read_text())
    except yaml.YAMLError as err:  # before Hydra, which would answer with a traceback
        print(f"stage {name}: {params_dir / 'params.yaml'} is not valid YAML: {err}", file=sys.stderr)
        raise SystemExit(2) from err
    sys.argv += [
        f"hydra.run.dir=logs/hydra/{name}",
        f"hydra.sweep.dir=logs/hydra/{name}-multirun",
        "hydra.job.chdir=False",
    ]

    @hydra.main(config_path=str(params_dir), config_name="params", version_base="1.3")
    def _entry(raw: DictConfig) -> None:
        try:
            cfg = validate(raw, source="params.yaml")
        except ConfigError as err:
            log.error("%s", err)
            raise SystemExit(2) from err
        log.info("stage %s, experiment %s", name, cfg.experiment_name)
        body(cfg)

    _entry()
