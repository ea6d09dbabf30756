"""Devices a plan is made for: accelerator memory from the vendors' data sheets, or this machine."""

from __future__ import annotations

import importlib
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache

GIB = 1 << 30


@dataclass(frozen=True)
class Device:
    """A device's usable memory (bytes), the memory a process holds before any model (bytes) and the
    seconds a stage process takes to start (imports; 0 where not measured)."""

    name: str
    memory_bytes: int
    process_bytes: int
    kind: str  # cuda | cpu
    startup_seconds: float = 0.0


# Memory per the data sheets; process_bytes is the CUDA context and allocator reserve (about 0.5 GiB).
CUDA_CONTEXT_BYTES = GIB // 2
DEVICES: dict[str, Device] = {
    name: Device(name, int(gib * GIB), CUDA_CONTEXT_BYTES, "cuda")
    for name, gib in {
        "h100-80gb": 80,
        "h200-141gb": 141,
        "a100-80gb": 80,
        "a100-40gb": 40,
        "l40s-48gb": 48,
        "a10g-24gb": 24,
        "rtx4090-24gb": 24,
        "t4-16gb": 16,
    }.items()
}


def current_rss_bytes() -> int:
    """Resident set size of this process now (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# What the training and attribution stages import before any work (torch, transformers, peft, pandas).
STAGE_MODULES = ("xurs_pipeline.train.runner", "xurs_pipeline.attribution.runner")


@cache
def local_device() -> Device:
    """This machine: physical memory; the resident memory of a process that imported the stages'
    libraries (this one, after importing them); a fresh process's time to import them (timed on the first
    call, a fresh interpreter's seconds; later calls in this process reuse it)."""
    for module in STAGE_MODULES:
        importlib.import_module(module)
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    start = time.perf_counter()
    statement = "; ".join(f"import {module}" for module in STAGE_MODULES)
    subprocess.run([sys.executable, "-c", statement], check=True, capture_output=True)
    return Device("local", total, current_rss_bytes(), "cpu", time.perf_counter() - start)


def resolve_device(name: str) -> Device:
    """``local`` or a name of ``DEVICES``; ValueError naming ``--device`` and the choices otherwise."""
    if name == "local":
        return local_device()
    if name not in DEVICES:
        raise ValueError(f"--device {name!r}: unknown; choose local or one of {sorted(DEVICES)}")
    return DEVICES[name]
