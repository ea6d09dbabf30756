"""Stages of a finished ``controlled_swap`` project again under changed keys, in a hard-linked copy, so that
nothing upstream (backbone, both trainings) is recomputed and PROJECT is never written.

    python bench/swap_rerun.py PROJECT COPY attribution.target_fn=entropy
    python bench/swap_rerun.py PROJECT COPY attribution.target_fn=betp --stages attribute attribute_swap swap

Each KEY=VALUE sets a dotted key of the copy's ``params.yaml`` (VALUE read as YAML); the named stages
(default: ``attribute``, ``attribute_swap``, ``swap``: every explanation and the study) run in order, in one
process, after their outputs are removed from the copy (they are hard links to PROJECT's files). Works on
projects made by ``dvc repro`` or by ``bench/swap_seeds.py --keep``; the copy's
``data/swap/study/summary.json`` then reads with ``bench/swap_table.py COPY``. docs/swap-control.md's
"width against predictive entropy and BetP" rows on held-out seeds are this script's output.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from xurs_pipeline.config import RootConfig, check_inside, validate
from xurs_pipeline.contracts import STAGES
from xurs_pipeline.tasks.pipeline import TASKS
from xurs_pipeline.tasks.runner import run_task

DEFAULT_STAGES = ("attribute", "attribute_swap", "swap")
_ABSENT = object()


def linked_copy(project: Path, copy: Path, changes: Mapping[str, Any]) -> RootConfig:
    """Hard-link ``project`` to ``copy`` (must not exist), set the dotted keys ``changes`` in the copy's own
    ``params.yaml`` and make ``copy`` the working directory; returns the copy's validated config. Every key
    and value is checked (``config.validate``) before anything is copied."""
    source = project / "params.yaml"
    params = OmegaConf.load(source)
    for dotted, value in changes.items():
        section = dotted.rpartition(".")[0]
        if section and not isinstance(OmegaConf.select(params, section), DictConfig):
            raise SystemExit(f"{source}: no section {section!r} for key {dotted!r}")
        if OmegaConf.select(params, dotted, default=_ABSENT) is _ABSENT:
            raise SystemExit(f"{source}: no key {dotted!r}")
        OmegaConf.update(params, dotted, value)
    cfg = validate(params, source=f"{source} with {dict(changes)}")
    copy = copy.resolve()
    subprocess.run(["cp", "-al", str(project), str(copy)], check=True)
    (copy / "params.yaml").unlink()  # a hard link to the project's
    (copy / "params.yaml").write_text(OmegaConf.to_yaml(params))
    check_inside(cfg, copy, source=str(copy / "params.yaml"))
    os.chdir(copy)  # the project's relative paths (artifacts, caches) now name the copy's
    return cfg


def remove_outputs(paths: Iterable[Path]) -> None:
    """Unlink each output (file or folder) so the rerun writes new files, never PROJECT's linked ones."""
    for path in paths:
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def parse_change(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (KEY, VALUE read as YAML)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE, e.g. attribution.target_fn=entropy")
    return key, yaml.safe_load(value)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("project", type=Path, help="a project where controlled_swap ran to the swap stage")
    parser.add_argument("copy", type=Path, help="where the hard-linked copy goes (must not exist)")
    parser.add_argument("changes", nargs="+", type=parse_change, help="KEY=VALUE settings of params.yaml")
    parser.add_argument("--stages", nargs="+", choices=list(STAGES), default=list(DEFAULT_STAGES))
    args = parser.parse_args()
    cfg = linked_copy(args.project, args.copy, dict(args.changes))
    remove_outputs(a.at(cfg.paths) for s in args.stages for a in STAGES[s].writes)
    for stage in [s for s in STAGES if s in args.stages]:  # dvc.yaml's order
        print(stage, run_task(stage, TASKS[stage], cfg), flush=True)


if __name__ == "__main__":
    main()
