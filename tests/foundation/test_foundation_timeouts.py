"""The per-test time limit (tests/conftest.py + pytest-timeout): an undeclared slow test fails, a test
marked ``slow`` gets the larger limit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def test_a_slow_test_must_declare_itself(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntimeout = 0.5\nmarkers =\n    slow: slow\n")
    conftest = CONFTEST.read_text()
    shortened = re.sub(r"(?m)^SLOW_TIMEOUT_S = \d+$", "SLOW_TIMEOUT_S = 30", conftest)
    assert shortened != conftest
    pytester.makeconftest(shortened)
    pytester.makepyfile(
        """
        import time
        import pytest

        def test_undeclared():
            time.sleep(1)

        @pytest.mark.slow
        def test_declared():
            time.sleep(1)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*Timeout (>0.5s)*", "FAILED*test_undeclared*"])
