"""Run the stages in one process, in ``dvc.yaml``'s order: ``run_pipeline(cfg, until="predict")``, or only
what one stage needs, as ``dvc repro <stage>`` does: ``run_pipeline(cfg, target="swap")``.

The same tasks as ``dvc repro`` (each stage's ``xurs_pipeline.tasks.<name>.run``, through
:func:`~xurs_pipeline.tasks.runner.run_task`, so the same outputs and headlines), without DVC's
bookkeeping (no ``dvc.lock``, no caching) and without paying every stage's interpreter start: for tests
and notebooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import ARTIFACTS, STAGES
from xurs_pipeline.tasks.runner import run_task, stage_task


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
        headlines[name] = run_task(name, stage_task(name), cfg)
        if name == until:
            break
    return headlines
