"""The pytest-xdist groups of tests/conftest.py: the tests that share a session project land in its group,
and a test that uses such a project outside its group stops the collection."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

spec = importlib.util.spec_from_file_location("suite_conftest", Path(__file__).parents[1] / "conftest.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)


@pytest.mark.parametrize(
    ("nodeid", "group"),
    [
        ("tests/pipeline/test_pipeline_smoke.py::test_table_cells_equal_the_artifacts", "smoke"),
        ("tests/pipeline/test_pipeline_browser.py::test_nothing_overflows_the_viewport_at_900_px", "smoke"),
        ("tests/pipeline/test_pipeline_medqa_dep.py::test_editing_a_medqa_question_reruns_prepare", None),
        ("tests/foundation/test_foundation_sweep.py::test_a_sweep_expands_into_one_dvc", None),
        ("tests/paper/test_paper_pipelines.py::test_writes_table1[paper_llama2]", "paper_llama2"),
        ("tests/paper/test_paper_pipelines.py::test_writes_table1[paper_smollm3]", "paper_smollm3"),
        ("tests/paper/test_paper_pipelines.py::test_only_sizes_differ_from_the_paper", None),
        ("tests/credal/test_credal_measures.py::test_width", None),
        ("tests/reliability/test_reliability_kill_train.py::test_train_survives_kills", "reliability"),
        ("tests/foundation/test_foundation_warm.py::test_a_warm_stage_sees_and_ends_as_a_cold_one", "warm"),
        ("tests/foundation/test_foundation_warm_other.py::test_x", None),
    ],
)
def test_node_ids_map_to_their_groups(nodeid: str, group: str | None) -> None:
    assert suite.worker_group(nodeid) == group


def test_a_project_test_outside_its_group_stops_the_collection() -> None:
    inside = SimpleNamespace(
        nodeid="tests/pipeline/test_pipeline_smoke.py::t", fixturenames=["smoke_project"]
    )
    suite._check_group(inside)  # in the smoke group: fine
    for elsewhere in ("tests/evaluation/test_x.py::test_y", "tests/pipeline/test_pipeline_new.py::test_y"):
        outside = SimpleNamespace(nodeid=elsewhere, fixturenames=["smoke_project"])
        with pytest.raises(pytest.UsageError, match="smoke project but is not in its xdist group"):
            suite._check_group(outside)
    paper = SimpleNamespace(
        nodeid="tests/paper/test_other.py::test_z[paper_llama2]",
        fixturenames=["paper_run"],
        callspec=SimpleNamespace(params={"paper_run": "paper_llama2"}),
    )
    with pytest.raises(pytest.UsageError, match="paper_llama2 project"):
        suite._check_group(paper)


@pytest.mark.parametrize(
    ("workers", "cores", "threads"), [(None, 2, None), ("2", 2, 1), ("2", 8, 4), ("4", 2, 1)]
)
def test_each_worker_runs_torch_on_its_share_of_the_cores(
    monkeypatch: pytest.MonkeyPatch, workers: str | None, cores: int, threads: int | None
) -> None:
    """Two workers on 2 cores: one thread each (torch's default, all cores each, oversubscribes them); one
    process (``-n 0``): torch's default (None)."""
    monkeypatch.setattr(suite.os, "sched_getaffinity", lambda pid: set(range(cores)))
    if workers is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", workers)
    assert suite.worker_threads() == threads
