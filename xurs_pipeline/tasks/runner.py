"""The one runner of every stage: Hydra loads ``params.yaml``, we validate it, check the declared inputs,
run the task and write its headline.

``python -m stages <name>`` (every ``dvc.yaml`` command) runs the task module of stage ``<name>``,
``xurs_pipeline/tasks/<name>.py`` (:func:`stage_task`), on the composed ``params.yaml`` (what DVC tracks);
Hydra command-line overrides (``train.seed=17``) and multirun (``-m train.seed=7,17,23``) work as usual.
Hydra's run directories hold logs only (``logs/hydra/<stage>/...``); artifacts go to the fixed paths in
``cfg.paths`` (declared in ``xurs_pipeline/contracts.py``).

A :class:`~xurs_pipeline.errors.XursError` (bad config, data or artifact) ends the stage with one log
line and exit status 2; any other exception is a bug and keeps its traceback (exit status 1).
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import hydra
import yaml
from omegaconf import DictConfig

from xurs_pipeline.config import RootConfig, validate
from xurs_pipeline.contracts import ARTIFACTS, STAGES, param_keys, stage_inputs
from xurs_pipeline.errors import XursError
from xurs_pipeline.io import write_json

log = logging.getLogger("xurs")
Task = Callable[[RootConfig], Mapping[str, Any] | None]


def stage_task(name: str) -> Task:
    """The task of declared stage ``name``: ``run`` of its module ``xurs_pipeline.tasks.<name>``, imported
    only now (a stage process imports its own task's dependencies, nothing else)."""
    return importlib.import_module(STAGES[name].task).run  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    """``python -m stages <name> [overrides]``: run stage ``<name>``; exit status 2 naming the closest
    declared stage when there is none of that name. A task module with its own ``main()`` (``check``, which
    must report a ``params.yaml`` that Hydra cannot load) runs that instead of :func:`run_stage`."""
    name = argv[1] if len(argv) > 1 else ""
    if name not in STAGES:
        close = difflib.get_close_matches(name, STAGES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        print(f"stages: no stage {name!r}; {hint}stages: {', '.join(STAGES)}", file=sys.stderr)
        return 2
    del argv[1]  # what follows are Hydra's overrides
    module = importlib.import_module(STAGES[name].task)
    if hasattr(module, "main"):
        return int(module.main())
    run_stage(name, module.run)
    return 0


def write_headline(values: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a flat headline file atomically (no provenance header: it would add three DVC columns)."""
    flat = [k for k, v in values.items() if isinstance(v, Mapping)]
    if flat:
        raise ValueError(f"{path}: headline values must be flat numbers; {flat} are sections")
    return write_json(values, path)


def run_task(name: str, task: Task, cfg: RootConfig) -> Mapping[str, Any] | None:
    """Run stage ``name``'s task on a validated config and write its headline (``<name>_headline``, when
    the stage declares one and the task returns one: only the main process of a distributed run does)."""
    log.info("stage %s, experiment %s", name, cfg.experiment_name)
    headline = task(cfg)
    declared = ARTIFACTS.get(f"{name}_headline")
    if headline is not None and declared is not None:
        write_headline(headline, declared.at(cfg.paths))
    return headline


def run_stage(name: str, task: Task) -> None:
    """Run ``task`` as the Hydra entry point of stage ``name`` (call it under ``__main__``)."""
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
            check_declared_inputs(name, params_dir)
            run_task(name, task, cfg)
        except XursError as err:
            log.error("%s: %s", name, err)
            raise SystemExit(2) from err

    _entry()


def check_declared_inputs(name: str, project: Path) -> None:
    """Refuse to run when ``dvc.yaml`` lacks an input or a params key this config makes the stage read (the
    MedQA files, comparison runs; the data keys of another ``data.source``): DVC would not rerun the stage
    when they change. Without ``dvc.yaml``, no check."""
    dvc_file = project / "dvc.yaml"
    if not dvc_file.is_file():
        return
    composed = yaml.safe_load((project / "params.yaml").read_text())
    stage = yaml.safe_load(dvc_file.read_text()).get("stages", {}).get(name, {})
    deps = stage.get("deps", [])
    params = {str(p) for p in stage.get("params", []) if not isinstance(p, dict)}
    whole = any(isinstance(p, dict) for p in stage.get("params", []))  # `- params.yaml:`: every key
    missing = [dep for dep in stage_inputs(name, composed) if dep not in deps]
    missing += [] if whole else [key for key in param_keys(name, composed) if key not in params]
    if missing:
        raise XursError(
            f"{dvc_file} does not list {missing} as deps or params of stage {name}, which this params.yaml "
            f"makes it read: run `xurs dvc-yaml` (or `xurs params ...`, which also writes dvc.yaml)"
        )
