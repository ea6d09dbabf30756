"""The process group of a stage started with several processes: ``torchrun --nproc_per_node N``,
``accelerate launch --multi_gpu --num_processes N`` or ``mpirun``.

Every stage that may run on several processes (``train_head``, ``train``, ``predict``, the attribution
stages) calls :func:`process_group` before anything else: it forms the group through accelerate (gloo on
CPUs, NCCL on GPUs) and refuses a launch whose processes would not form it, so a launch never runs N
independent copies that race on the same outputs. One process (``python -m stages X``, ``dvc repro``) is
a group of one.
"""

from __future__ import annotations

import os

import torch
from accelerate import PartialState

from xurs_pipeline.errors import LaunchError

# The variables that launchers set to the number of processes (torchrun and accelerate: WORLD_SIZE;
# MPI implementations: the others), as accelerate reads them.
SIZE_VARIABLES = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
CPU_COMMAND = "torchrun --nproc_per_node N -m stages <stage>"


def launched_processes() -> int:
    """The number of processes the launcher started (1 without a launcher)."""
    sizes = [int(os.environ[v]) for v in SIZE_VARIABLES if os.environ.get(v, "").strip()]
    return max(sizes, default=1)


def _accelerate_cpu_single_launch() -> bool:
    """``accelerate launch --cpu --num_processes N>1`` without mpirun: its simple launcher starts ONE
    process, exporting MASTER_ADDR (only done for N > 1) and ACCELERATE_USE_CPU but no process count."""
    use_cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    return use_cpu and "MASTER_ADDR" in os.environ and launched_processes() == 1


def process_group(cpu: bool | None = None) -> PartialState:
    """Form (or return the already formed) process group of this launch.

    ``cpu``: run on the CPU (gloo between processes); None: when no GPU is available. Raises
    :class:`LaunchError` when the launch asked for several processes but the group has another size.
    """
    if _accelerate_cpu_single_launch():
        raise LaunchError(
            "accelerate launch --cpu --num_processes N started a single process (its CPU launcher starts "
            f"N processes only under mpirun); nothing was run. On CPUs use `{CPU_COMMAND}`"
        )
    if cpu is None:
        cpu = not torch.cuda.is_available()
    asked = launched_processes()
    state = PartialState(cpu=cpu, **({"backend": "gloo"} if cpu and asked > 1 else {}))
    if state.num_processes != asked:
        raise LaunchError(
            f"the launcher started {asked} processes (WORLD_SIZE) but they formed a group of "
            f"{state.num_processes} ({state.distributed_type}); nothing was run, so no process duplicates "
            f"the others' work. On CPUs use `{CPU_COMMAND}`; on GPUs `accelerate launch --multi_gpu "
            "--num_processes N -m stages <stage>` with N at most the GPUs"
        )
    return state
