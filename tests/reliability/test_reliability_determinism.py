"""Same config and seeds -> the same artifacts on CPU, bit for bit, however the run was executed.

The reference project ran each stage once, uninterrupted. Here the same stages run again: predict
in a new process without the feature cache the reference had; attribute split into two shards run
by two processes that meet at a gloo barrier (as under ``torchrun --nproc_per_node 2``); and
attribute in a fresh interpreter (``python -m stages attribute``, forked from neither the reliability fork
server nor the warm stage server of tests/conftest.py).
Resumed runs are compared in ``test_reliability_kill_*``.

Bitwise equality needs the same number of CPU threads per process: float sums are split across
threads, so the thread count changes rounding. accelerate gives each of N processes on one machine
1/N of the cores unless OMP_NUM_THREADS is set; shards then agree with a one-process run to float32
rounding only (measured below), and bit for bit with OMP_NUM_THREADS equal to the one-process count.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from reliability_proc import StageProcess
from reliability_project import ROOT, assert_same_attribute, copy_project, parquet_equal

from stages.__main__ import ENV as WARM_ENV
from xurs_pipeline.io import read_json, read_parquet


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_predictions_are_reproduced_without_the_feature_cache(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "project", "backbone", "prepare", "train")
    code = StageProcess(project, "predict").start().wait()
    assert code == 0
    assert not (reference / "data" / "predict" / "predictions.parquet").samefile(
        project / "data" / "predict" / "predictions.parquet"
    )
    parquet_equal(
        project / "data" / "predict" / "predictions.parquet",
        reference / "data" / "predict" / "predictions.parquet",
    )
    assert read_json(project / "data" / "predict" / "metrics.json") == read_json(
        reference / "data" / "predict" / "metrics.json"
    )


def _two_shards(project: Path, threads: dict[str, str]) -> Path:
    """Run attribute as two processes (ranks 0 and 1, gloo); returns the output folder."""
    port = str(_free_port())
    shards = [
        StageProcess(
            project,
            "attribute",
            env={
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": "2",
                "LOCAL_WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
                **threads,
            },
        ).start()
        for rank in (0, 1)
    ]
    codes = [shard.wait() for shard in shards]
    assert codes == [0, 0], "\n".join(shard.log()[-2000:] for shard in shards)
    return project / "data" / "attribute"


def _reference_threads(reference: Path) -> int:
    """The CPU threads the reference's one-process attribute run had (its stage processes, not this test
    process: pytest-xdist workers run torch on fewer, tests/conftest.py)."""
    return int(read_json(reference / "data" / "attribute" / "parts" / "shard-0-of-1.json")["torch_threads"])


def test_two_process_shards_equal_the_one_process_run(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "project", "backbone", "prepare", "train")
    out = _two_shards(project, {"OMP_NUM_THREADS": str(_reference_threads(reference))})
    questions = sorted(read_parquet(out / "attributions.parquet")["record_id"])
    computed = [read_json(out / "parts" / f"shard-{i}-of-2.json")["computed"] for i in (0, 1)]
    assert all(computed)
    assert set(computed[0]).isdisjoint(computed[1])
    assert sorted(computed[0] + computed[1]) == questions
    assert_same_attribute(out, reference / "data" / "attribute")


def test_shards_with_fewer_threads_agree_to_float32_rounding(reference: Path, tmp_path: Path) -> None:
    threads = _reference_threads(reference)
    if threads < 2:
        pytest.skip("one thread per process either way")
    project = copy_project(reference, tmp_path / "project", "backbone", "prepare", "train")
    out = _two_shards(project, {})  # accelerate's default: cores / 2 threads per process
    assert [read_json(out / "parts" / f"shard-{i}-of-2.json")["torch_threads"] for i in (0, 1)] == [
        max(1, threads // 2)
    ] * 2
    mine = read_parquet(out / "attributions.parquet")
    theirs = read_parquet(reference / "data" / "attribute" / "attributions.parquet")
    for column in ("width_input", "signed_sum", "residual"):
        np.testing.assert_allclose(mine[column], theirs[column], rtol=1e-4, atol=1e-6)
    for a, b in zip(mine["token_signed"], theirs["token_signed"], strict=True):
        assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max()


def test_fresh_interpreter_reproduces_the_attributions(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "project", "backbone", "prepare", "train")
    env = {**{k: v for k, v in os.environ.items() if k != WARM_ENV}, "PYTHONPATH": str(ROOT)}  # cold
    result = subprocess.run(
        [sys.executable, "-m", "stages", "attribute"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_attribute(project / "data" / "attribute", reference / "data" / "attribute")
