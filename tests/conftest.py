"""Suite-wide test settings: the per-test time limit and the session's shared smoke project.

Every test runs under pytest-timeout's limit (``timeout`` in pyproject.toml): a test that needs longer has
to say so with ``@pytest.mark.slow``, which raises its limit to :data:`SLOW_TIMEOUT_S` (an explicit
``@pytest.mark.timeout(n)`` wins over both).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
for _path in (str(TESTS.parent), str(TESTS)):  # `stages`, and shared helpers such as smoke_project.py
    if _path not in sys.path:
        sys.path.insert(0, _path)

from smoke_project import build_smoke_project  # noqa: E402

SLOW_TIMEOUT_S = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


@pytest.fixture(scope="session")
def smoke_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke experiment through ``dvc repro`` once per session (tests/smoke_project.py). Tests that
    edit its files restore them before they return."""
    return build_smoke_project(tmp_path_factory.mktemp("smoke"))
