"""Several processes: a launch that cannot form the process group it asked for stops with a LaunchError
(exit 2 through the stage runner) instead of running independent copies that race on the outputs, and each
optimiser step covers the same examples at any process count (the two-process runs themselves are in
tests/paper/test_paper_processes.py)."""

from __future__ import annotations

import pytest
from accelerate import PartialState

from xurs_pipeline.errors import LaunchError, XursError
from xurs_pipeline.processes import launched_processes, process_group
from xurs_pipeline.train.data import step_batches


@pytest.fixture
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (
        "WORLD_SIZE",
        "PMI_SIZE",
        "OMPI_COMM_WORLD_SIZE",
        "MV2_COMM_WORLD_SIZE",
        "MASTER_ADDR",
        "ACCELERATE_USE_CPU",
    ):
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


@pytest.mark.parametrize(
    ("n", "global_batch", "batch_size", "processes"),
    [(24, 8, 4, 2), (8, 16, 4, 2), (10, 8, 1, 4), (7, 4, 2, 1)],
)
def test_every_process_count_covers_the_same_examples_per_step(
    n: int, global_batch: int, batch_size: int, processes: int
) -> None:
    """The real examples of step s over all processes are the step's examples of one process taking the
    whole global batch at once; every process runs the same number of micro-batches (stand-ins where its
    slot is empty), so they meet at every synchronisation."""
    order = [100 + (7 * i) % n for i in range(n)]  # a permutation
    whole = step_batches(order, global_batch, global_batch, 1, 0)
    shards = [step_batches(order, global_batch, batch_size, processes, rank) for rank in range(processes)]
    accumulation = global_batch // (batch_size * processes)
    for s, (n_step, ((examples, real),)) in enumerate(whole):
        assert real
        assert n_step == len(examples)
        parts = [shard[s] for shard in shards]
        assert all(part[0] == n_step and len(part[1]) == accumulation for part in parts)
        covered = [i for _, micro in parts for idx, ok in micro if ok for i in idx]
        assert sorted(covered) == sorted(examples)  # each example once
        stand_ins = [idx for _, micro in parts for idx, ok in micro if not ok]
        assert all(idx == [examples[0]] for idx in stand_ins)
    assert sum(len(e) for _, ((e, _),) in whole) == n


def test_an_empty_slot_holds_a_stand_in() -> None:
    """8 examples, global batch 16, 2 processes x batch 4: two accumulation steps, the second empty."""
    order = list(range(8))
    assert step_batches(order, 16, 4, 2, 0) == [(8, [([0, 1, 2, 3], True), ([0], False)])]
    assert step_batches(order, 16, 4, 2, 1) == [(8, [([4, 5, 6, 7], True), ([0], False)])]
