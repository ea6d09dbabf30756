"""Run the stages in one process, in ``dvc.yaml``'s order: ``run_pipeline(cfg, until="predict")``, or only
what one stage needs, as ``dvc repro <stage>`` does: ``run_pipeline(cfg, target="swap")``.

The same tasks as ``dvc repro`` (each through :func:`~xurs_pipeline.tasks.runner.run_task`, so the same
outputs and headlines), without DVC's bookkeeping (no ``dvc.lock``, no caching) and without paying every
stage's interpreter start: for tests and notebooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import ARTIFACTS, STAGES
from xurs_pipeline.tasks import (
    attribute,
    attribute_repeats,
    attribute_swap,
    attribute_targets,
    backbone,
    check,
    checks,
    gates,
    mask_eval,
    predict,
    prepare,
    report,
    swap,
    tables,
    train,
    train_head,
    train_swap,
)
from xurs_pipeline.tasks.runner import Task, run_task

TASKS: dict[str, Task] = {
    "check": check.run,
    "backbone": backbone.run,
    "prepare": prepare.run,
    "train_head": train_head.run,
    "train": train.run,
    "predict": predict.run,
    "gates": gates.run,
    "attribute": attribute.run,
    "attribute_repeats": attribute_repeats.run,
    "attribute_targets": attribute_targets.run,
    "mask_eval": mask_eval.run,
    "checks": checks.run,
    "train_swap": train_swap.run,
    "attribute_swap": attribute_swap.run,
    "swap": swap.run,
    "tables": tables.run,
    "report": report.run,
}


def upstream(stage: str) -> list[str]:
    """``stage`` and every stage whose outputs it needs, directly or not, in ``STAGES`` order (``check``
    first: it validates the config before anything is written)."""
    if stage not in STAGES:
        raise KeyError(f"{stage!r}: no such stage; stages: {list(STAGES)}")
    needed, todo = {"check"}, [stage]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += [ARTIFACTS[a].writer for a in STAGES[name].reads]
    return [name for name in STAGES if name in needed]


def run_pipeline(
    cfg: RootConfig, until: str | None = None, target: str | None = None
) -> dict[str, Mapping[str, Any] | None]:
    """Run the stages of ``contracts.STAGES`` in order: every one up to and including ``until`` (default:
    all), or with ``target`` only the stages it needs (:func:`upstream`); returns each stage's headline (None
    for stages without one)."""
    if until is not None and until not in STAGES:
        raise KeyError(f"until={until!r}: no such stage; stages: {list(STAGES)}")
    names = upstream(target) if target is not None else list(STAGES)
    headlines: dict[str, Mapping[str, Any] | None] = {}
    for name in names:
        headlines[name] = run_task(name, TASKS[name], cfg)
        if name == until:
            break
    return headlines
