"""A launch that cannot form the process group it asked for stops with a LaunchError (exit 2 through the
stage runner) instead of running independent copies that race on the outputs."""

from __future__ import annotations

import pytest
from accelerate import PartialState

from xurs_pipeline.errors import LaunchError, XursError
from xurs_pipeline.processes import launched_processes, process_group


@pytest.fixture
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "MASTER_ADDR",
                 "ACCELERATE_USE_CPU"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_one_process_is_a_group_of_one(no_launcher: pytest.MonkeyPatch) -> None:
    assert launched_processes() == 1
    assert process_group().num_processes == 1


def test_accelerate_cpu_launch_of_several_processes_is_refused(no_launcher: pytest.MonkeyPatch) -> None:
    """What `accelerate launch --cpu --num_processes 2` hands its one process (accelerate 1.x's simple
    launcher: MASTER_ADDR only for more than one process, no process count)."""
    no_launcher.setenv("ACCELERATE_USE_CPU", "True")
    assert process_group().num_processes == 1  # --num_processes 1: no MASTER_ADDR, fine
    no_launcher.setenv("MASTER_ADDR", "127.0.0.1")
    with pytest.raises(LaunchError, match=r"started a single process.*torchrun --nproc_per_node N"):
        process_group()


def test_processes_that_formed_another_group_are_refused(no_launcher: pytest.MonkeyPatch) -> None:
    PartialState()  # this process already belongs to a group of one
    no_launcher.setenv("WORLD_SIZE", "2")
    assert launched_processes() == 2
    with pytest.raises(LaunchError, match=r"started 2 processes \(WORLD_SIZE\) but they formed a group of 1"):
        process_group()
    assert issubclass(LaunchError, XursError)  # one line and exit 2 through the stage runner
