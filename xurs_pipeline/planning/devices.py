"""Devices a plan is made for: accelerator memory from the vendors' data sheets, or this machine."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

GIB = 1 << 30


@dataclass(frozen=True)
class Device:
    """A device's usable memory (bytes) and the memory a process holds before any model (bytes)."""

    name: str
    memory_bytes: int
    process_bytes: int
    kind: str  # cuda | cpu


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


def local_device() -> Device:
    """This machine: physical memory, and the resident memory of a process that imported the pipeline's
    libraries (this one, measured after importing what the training and attribution stages import)."""
    import xurs_pipeline.attribution.runner
    import xurs_pipeline.train.runner  # noqa: F401

    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return Device("local", total, current_rss_bytes(), "cpu")


def resolve_device(name: str) -> Device:
    """``local`` or a name of ``DEVICES``; ValueError naming ``--device`` and the choices otherwise."""
    if name == "local":
        return local_device()
    if name not in DEVICES:
        raise ValueError(f"--device {name!r}: unknown; choose local or one of {sorted(DEVICES)}")
    return DEVICES[name]
