"""Suite-wide test settings: the per-test time limit, the pytest-xdist groups and the session's shared smoke
project.

Every test runs under pytest-timeout's limit (``timeout`` in pyproject.toml): a test that needs longer has
to say so with ``@pytest.mark.slow``, which raises its limit to :data:`SLOW_TIMEOUT_S` (an explicit
``@pytest.mark.timeout(n)`` wins over both).

The suite runs on two pytest-xdist workers (``addopts`` in pyproject.toml): tests that share a session project
run on one worker, in order (:data:`GROUPS`, :func:`pytest_xdist_make_scheduler`); the rest are shared out.

The stages that tests start (``dvc repro``, ``python -m stages``) fork from one warm server per worker
(:func:`warm_stages`, stages/warm.py) instead of importing torch and transformers each time;
``XURS_TEST_COLD=1`` starts every stage cold.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
for _path in (str(TESTS.parent), str(TESTS)):  # `stages`, and shared helpers such as smoke_project.py
    if _path not in sys.path:
        sys.path.insert(0, _path)

from smoke_project import build_smoke_project  # noqa: E402

SLOW_TIMEOUT_S = 1800


def worker_threads() -> int | None:
    """CPU threads for torch in one pytest-xdist worker: the cores shared out among the workers (at least
    one); None outside xdist (``pytest -n 0`` keeps torch's default). Two workers with torch's default (all
    cores each) on a 2-core machine made one attribution test 30-100x slower than alone (BENCHMARKS.md
    section 16): OpenMP threads wait on each other while the other worker holds the core."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return None
    return max(1, len(os.sched_getaffinity(0)) // int(workers))


def pytest_configure(config: pytest.Config) -> None:
    threads = worker_threads()
    if threads is not None:
        import torch

        torch.set_num_threads(threads)  # processes a test starts get the same (smoke_project.run_ok)


# Tests that share a session project run on one pytest-xdist worker, in order: the smoke project's tests (they
# edit its files in turn), each paper-architecture project with its tests, the reliability tests (one
# reference project, not one per worker), and the files whose module fixture is slow to start (its own warm
# server, a fresh clone's sweep, one torchrun launch) once rather than on each worker. Keyed by node id,
# because the scheduler (in the controlling process) sees node ids only; collection checks that every test
# using such a project is in its group.
# A group: node-id patterns (prefix, text inside), any of which admits a test.
PAPER_TESTS = "tests/paper/test_paper_pipelines.py::"
SMOKE_FILES = ("browser", "in_process", "readme", "smoke")  # tests/pipeline/test_pipeline_<name>.py
GROUPS = {
    # the smoke project's tests (test_pipeline_medqa_dep.py builds its own small project and runs anywhere)
    "smoke": [(f"tests/pipeline/test_pipeline_{name}.py::", "") for name in SMOKE_FILES],
    "paper_smollm3": [(PAPER_TESTS, "[paper_smollm3]")],
    "paper_llama2": [(PAPER_TESTS, "[paper_llama2]")],
    # one torchrun launch shared by the file's tests (its module fixture would run on each worker)
    "processes": [("tests/paper/test_paper_processes.py::", "")],
    "user_clone": [("tests/foundation/test_foundation_experiments.py::", "")],
    # the swap study's two-seed sweep from a fresh clone (its module fixture would run on each worker)
    "swap_sweep": [("tests/pipeline/test_pipeline_swap_methods.py::", "")],
    # the reliability tests' reference project and stage fork server (tests/reliability/conftest.py), once
    "reliability": [("tests/reliability/", "")],
    # the warm-server tests' own server (its module fixture imports the stages' libraries for seconds)
    "warm": [("tests/foundation/test_foundation_warm.py::", "")],
}
# the groups that take longest start first (they are the suite's critical path)
LONG_FIRST = (
    "user_clone",
    "swap_sweep",
    "smoke",
    "reliability",
    "paper_llama2",
    "paper_smollm3",
    "processes",
)


def worker_group(nodeid: str) -> str | None:
    """The group of a test's node id, or None (a test that can run on any worker)."""
    for group, patterns in GROUPS.items():
        if any(nodeid.startswith(prefix) and inside in nodeid for prefix, inside in patterns):
            return group
    return None


def _check_group(item: pytest.Item) -> None:
    fixtures = getattr(item, "fixturenames", ())
    needed = "smoke" if "smoke_project" in fixtures else None
    if "paper_run" in fixtures:
        needed = item.callspec.params["paper_run"]  # type: ignore[attr-defined]
    if needed is not None and worker_group(item.nodeid) != needed:
        raise pytest.UsageError(
            f"{item.nodeid} uses the {needed} project but is not in its xdist group: add it to GROUPS "
            "in tests/conftest.py"
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
        _check_group(item)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own (a first-result hook)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """pytest-xdist's scope scheduling with :data:`GROUPS` as the scopes (every other test its own scope),
    the long groups first. (``--dist loadgroup`` would do this from markers, but pytest-xdist 3.8 marks a
    node id that pytest 9.2 no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ProjectGroups(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid) or nodeid

        def _assign_work_unit(self, node) -> None:  # type: ignore[no-untyped-def]
            if not self.ordered:
                for group in reversed(LONG_FIRST):
                    if group in self.workqueue:
                        self.workqueue.move_to_end(group, last=False)
                self.ordered = True
            super()._assign_work_unit(node)

    return ProjectGroups(config, log)


@pytest.fixture(scope="session", autouse=True)
def warm_stages() -> Iterator[None]:
    """This worker's warm stage server, named to every process it starts by ``XURS_WARM_SOCKET``; stages
    started before it is up (its imports take seconds) start cold."""
    from stages.__main__ import ENV
    from stages.warm import start_server

    if os.environ.get("XURS_TEST_COLD"):
        yield
        return
    directory = Path(tempfile.mkdtemp(prefix="xw-"))  # short: a UNIX socket's path has at most 107 bytes
    with (directory / "server.log").open("w") as log:
        server = start_server(directory / "stages.sock", os.environ, stdout=log, stderr=subprocess.STDOUT)
    os.environ[ENV] = str(directory / "stages.sock")
    yield
    os.environ.pop(ENV, None)  # a test may have rebuilt os.environ without it
    server.terminate()
    server.wait(timeout=60)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def smoke_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke experiment through ``dvc repro`` once per session (tests/smoke_project.py). Tests that
    edit its files restore them before they return."""
    return build_smoke_project(tmp_path_factory.mktemp("smoke"))


@pytest.fixture(scope="session")
def chromium():  # type: ignore[no-untyped-def]
    """Headless Chromium (Debian's package, tests/browser_checks.py) driven by Playwright, once per worker.
    Skips where the browser or Playwright is missing, unless XURS_BROWSER_REQUIRED is set (CI), where it
    fails."""
    from browser_checks import CHROMIUM, CHROMIUM_ARGS, REQUIRED_ENV, browser_missing, required

    why = browser_missing()
    if why:
        if required():
            pytest.fail(f"the browser tests must run ({REQUIRED_ENV} is set), but {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()
