"""Run pipeline stages as separate OS processes that a test can SIGKILL at chosen points.

Each run is ``python -m stages <name>`` in a project directory (``params.yaml`` there, Hydra overrides as
arguments), executed in a child forked from a ``multiprocessing`` fork server that has already imported
torch, transformers and the pipeline (a cold ``python -m`` costs ~10 s of imports on this machine; a
forked child starts in well under a second). The child is a real process: its own memory, files and
exit status; ``kill()`` sends SIGKILL.

Kill points are made deterministic with :class:`Hook`: the child patches one library function so that
its n-th matching call pauses the process (after writing ``<project>/PAUSED``), optionally truncating the
file the call just wrote, or sleeps after every call (a slow stage, killed at a poll-chosen moment).
"""

from __future__ import annotations

import importlib
import json
import multiprocessing as mp
import os
import re
import runpy
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

PRELOAD = (
    "reliability_proc",
    "xurs_pipeline.tasks.pipeline",
    "xurs_pipeline.attribution.runner",
    "xurs_pipeline.data.dataset",
    "xurs_pipeline.models.checkpoint",
    "xurs_pipeline.train.runner",
    "xurs_pipeline.train.metrics",
    "accelerate",
)
PAUSE_MARKER = "PAUSED"
PAUSE_SECONDS = 300.0


@dataclass(frozen=True)
class Hook:
    """Patch ``target`` ("module:attr.attr") in the child.

    action: ``pause`` (stop at the ``nth`` matching call, ``when`` before/after it), ``truncate_pause``
    (after the ``nth`` matching call, cut the file given as positional argument ``path_arg`` to half its
    size, then pause: a half-written temporary file), ``delay`` (sleep ``seconds`` after every call),
    ``oom`` (raise ``torch.OutOfMemoryError`` instead of the call when positional argument ``path_arg`` is
    a tensor that requires grad with more than ``nth`` rows: a device too small for that batch).
    match: regex searched in the string of positional argument ``path_arg``; other calls are not counted.
    """

    target: str
    action: str = "pause"
    nth: int = 1
    when: str = "after"
    match: str = ""
    path_arg: int = 1
    seconds: float = 0.0


def _resolve(target: str) -> tuple[Any, str]:
    module_name, _, attr_path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = attr_path.split(".")
    for part in parents:
        owner = getattr(owner, part)
    return owner, name


def _pause(hook: Hook, detail: str) -> None:
    Path(PAUSE_MARKER).write_text(json.dumps({"hook": asdict(hook), "detail": detail}))
    time.sleep(PAUSE_SECONDS)
    raise RuntimeError(f"paused at {hook.target} and never killed")


def _raise_oom_above(tensor: Any, rows: int) -> None:
    import torch

    if getattr(tensor, "requires_grad", False) and tensor.shape[0] > rows:
        raise torch.OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate 2.00 GiB (injected: batch of {tensor.shape[0]} > {rows})"
        )


def install(hook: Hook) -> None:
    owner, name = _resolve(hook.target)
    original = getattr(owner, name)
    pattern = re.compile(hook.match) if hook.match else None
    calls = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if hook.action == "oom":
            _raise_oom_above(args[hook.path_arg], hook.nth)
            return original(*args, **kwargs)
        subject = str(args[hook.path_arg]) if len(args) > hook.path_arg else ""
        counted = pattern is None or bool(pattern.search(subject))
        if counted:
            calls["n"] += 1
        hit = counted and calls["n"] == hook.nth
        if hit and hook.action == "pause" and hook.when == "before":
            _pause(hook, subject)
        result = original(*args, **kwargs)
        if hook.action == "delay" and counted:
            time.sleep(hook.seconds)
        elif hit and hook.action == "truncate_pause":
            path = Path(subject)
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
            _pause(hook, subject)
        elif hit and hook.action == "pause" and hook.when == "after":
            _pause(hook, subject)
        return result

    setattr(owner, name, wrapper)


def _child(
    stage: str, project: str, argv: list[str], hooks: list[Hook], log: str, env: dict[str, str]
) -> None:
    os.chdir(project)
    os.environ.update(env)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    for hook in hooks:
        install(hook)
    sys.argv = ["stages/__main__.py", stage, *argv]
    sys.modules.pop("stages.__main__", None)
    runpy.run_module("stages", run_name="__main__", alter_sys=True)


_CONTEXT: mp.context.ForkServerContext | None = None
HERE = Path(__file__).resolve().parent


def _server_env() -> dict[str, str]:
    """The fork server is a fresh interpreter: it finds the pipeline and these helpers on PYTHONPATH."""
    paths = [str(HERE), str(HERE.parents[1]), *filter(None, [os.environ.get("PYTHONPATH", "")])]
    return {"PYTHONPATH": os.pathsep.join(paths), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def context() -> mp.context.ForkServerContext:
    """The fork server (started once per test session, with the pipeline imported)."""
    global _CONTEXT
    if _CONTEXT is None:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(PRELOAD))
        saved = dict(os.environ)
        os.environ.update(_server_env())
        try:
            forkserver.ensure_running()  # inherits this environment; the test process keeps its own
        finally:
            os.environ.clear()
            os.environ.update(saved)
        _CONTEXT = ctx
    return _CONTEXT


@dataclass
class StageProcess:
    """One stage run in ``project``; ``start()``, then ``wait()`` or ``wait_paused()`` + ``kill()``."""

    project: Path
    stage: str
    overrides: Sequence[str] = ()
    hooks: Sequence[Hook] = ()
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    process: Any = None

    def start(self) -> StageProcess:
        logs = self.project / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"{self.stage}-{time.monotonic_ns()}.log"
        (self.project / PAUSE_MARKER).unlink(missing_ok=True)
        args = (
            self.stage,
            str(self.project),
            list(self.overrides),
            list(self.hooks),
            str(self.log_path),
            dict(self.env),
        )
        self.process = context().Process(target=_child, args=args, daemon=True)
        self.process.start()
        return self

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path and self.log_path.is_file() else ""

    def wait(self, timeout: float = 600.0) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.kill()
            raise AssertionError(f"stage {self.stage} still running after {timeout} s:\n{self.log()[-3000:]}")
        return int(self.process.exitcode)

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 600.0) -> None:
        """Poll ``condition`` every 10 ms while the process runs; fail if it exits or times out first."""
        deadline = time.monotonic() + timeout
        while not condition():
            if not self.process.is_alive():
                code = self.process.exitcode
                tail = self.log()[-3000:]
                raise AssertionError(f"stage {self.stage} exited ({code}) before {what}:\n{tail}")
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(
                    f"stage {self.stage}: no {what} after {timeout} s:\n{self.log()[-3000:]}"
                )
            time.sleep(0.01)

    def wait_paused(self, timeout: float = 600.0) -> dict[str, Any]:
        marker = self.project / PAUSE_MARKER
        self.wait_for(marker.is_file, "pause at its hook", timeout)
        time.sleep(0.05)  # the marker is written before the sleep; let the write finish
        return json.loads(marker.read_text())

    def kill(self) -> None:
        """SIGKILL the stage process and reap it."""
        if self.process is not None and self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        if self.process is not None:
            self.process.join(30)
        (self.project / PAUSE_MARKER).unlink(missing_ok=True)


def run_stage(
    project: Path, stage: str, *overrides: str, hooks: Sequence[Hook] = (), env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run a stage to its end: (exit status, its log)."""
    proc = StageProcess(project, stage, overrides, hooks, env or {}).start()
    code = proc.wait()
    return code, proc.log()


def run_ok(project: Path, stage: str, *overrides: str, env: dict[str, str] | None = None) -> str:
    """Run a stage that must succeed; returns its log."""
    code, log = run_stage(project, stage, *overrides, env=env)
    assert code == 0, f"stage {stage} failed with {code}:\n{log[-4000:]}"
    return log


def killed_at(project: Path, stage: str, hook: Hook, *overrides: str) -> dict[str, Any]:
    """Run ``stage`` until ``hook`` pauses it, SIGKILL it there; returns the pause record."""
    proc = StageProcess(project, stage, overrides, [hook]).start()
    try:
        where = proc.wait_paused()
    finally:
        proc.kill()
    assert proc.process.exitcode == -signal.SIGKILL
    return where
