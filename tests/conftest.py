"""Suite-wide test settings: the per-test time limit.

Every test runs under pytest-timeout's limit (``timeout`` in pyproject.toml): a test that needs longer has
to say so with ``@pytest.mark.slow``, which raises its limit to :data:`SLOW_TIMEOUT_S` (an explicit
``@pytest.mark.timeout(n)`` wins over both).
"""

from __future__ import annotations

import pytest

SLOW_TIMEOUT_S = 1200


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
