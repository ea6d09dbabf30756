"""Which params keys each stage's task reads, recorded while it runs, against the keys it lists.

:func:`recording` rebuilds a validated config from subclasses of each section's dataclass whose
attribute access notes ``section.key`` (a nested section: ``evaluation.gates.accuracy_min``) under the
stage running at that moment (the ``name`` of the innermost ``tasks.runner.run_task`` frame). Copying a
config (``dataclasses.replace``) and validating a copy (``__post_init__``) read nothing; hashing a section
(``asdict``) reads every key of it. :func:`unlisted_reads` compares the record with ``contracts.STAGES``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any

from xurs_pipeline.contracts import ALL, ARTIFACTS, NO_RESULT, STAGES, param_keys
from xurs_pipeline.tasks import runner

Reads = dict[str, set[str]]  # stage -> dotted keys its task read
_COPYING = {dataclasses.replace.__code__}  # reads made while copying a config are no reads


def _reading_stage() -> str | None:
    """The stage whose task is running (None outside one, or in the runner's own bookkeeping)."""
    frame = sys._getframe(2)  # the caller of __getattribute__
    if frame.f_code in _COPYING or frame.f_code is runner.run_task.__code__:
        return None
    while frame is not None:
        if frame.f_code is runner.run_task.__code__:
            return str(frame.f_locals["name"])
        frame = frame.f_back
    return None


def _recording_class(cls: type, prefix: str, reads: Reads, cache: dict[tuple[type, str], type]) -> type:
    if (cls, prefix) in cache:
        return cache[(cls, prefix)]
    names = {f.name for f in fields(cls)}
    validating = [0]

    def __getattribute__(self: Any, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if name in names and not validating[0] and not is_dataclass(value):
            stage = _reading_stage()
            if stage is not None:
                reads.setdefault(stage, set()).add(prefix + name)
        return value

    def __post_init__(self: Any) -> None:
        validating[0] += 1
        try:
            if hasattr(cls, "__post_init__"):
                cls.__post_init__(self)
        finally:
            validating[0] -= 1

    body = {"__getattribute__": __getattribute__, "__post_init__": __post_init__}
    cache[(cls, prefix)] = type(f"Recording{cls.__name__}", (cls,), body)
    return cache[(cls, prefix)]


def recording(cfg: Any, reads: Reads) -> Any:
    """``cfg`` (a validated ``RootConfig``) whose every key read inside a stage's task is added to
    ``reads[stage]``."""
    cache: dict[tuple[type, str], type] = {}

    def wrap(node: Any, prefix: str) -> Any:
        values = {f.name: object.__getattribute__(node, f.name) for f in fields(node)}
        values = {k: wrap(v, f"{prefix}{k}.") if is_dataclass(v) else v for k, v in values.items()}
        copy = object.__new__(_recording_class(type(node), prefix, reads, cache))
        copy.__dict__.update(values)  # no __init__: the values are validated already
        return copy

    return wrap(cfg, "")


def listed(stage: str, composed: Mapping[str, Any]) -> set[str]:
    """The keys ``stage`` may read: its own params and those of each stage whose artifacts it reads (they
    reach it through those artifacts, which carry their writer's hash of them: a change reruns the writer,
    changes its output and so reruns the reader); not through ``check``, whose output never changes."""
    writers = {ARTIFACTS[a].writer for a in STAGES[stage].reads} - {
        n for n, s in STAGES.items() if ALL in s.params
    }
    return {key for name in (stage, *writers) for key in param_keys(name, composed)}


def unlisted_reads(reads: Reads, composed: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per stage, the keys its task read that neither it nor a writer of what it reads lists (``paths.*``
    aside: the artifact paths in ``dvc.yaml`` are templated from them). Stages listing the whole file
    (:data:`~xurs_pipeline.contracts.ALL`) read what they like; keys that change no result
    (:data:`~xurs_pipeline.contracts.NO_RESULT`, a progress bar) are in no stage's params by design."""
    unlisted = {}
    for stage, keys in reads.items():
        if ALL in STAGES[stage].params:
            continue
        allowed = listed(stage, composed)
        missing = sorted(
            k
            for k in keys
            if not k.startswith("paths.")
            and k not in NO_RESULT
            and not any(k == a or k.startswith(f"{a}.") for a in allowed)
        )
        if missing:
            unlisted[stage] = missing
    return unlisted
