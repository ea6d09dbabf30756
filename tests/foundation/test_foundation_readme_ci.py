"""The README's quickstart is exactly two one-line commands, and CI runs the second one verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_quickstart_is_two_one_line_commands():
    commands = quickstart_commands()
    assert len(commands) == 2
    assert commands[0].endswith("dvc repro")
    assert all("torch==2.13.0" in command for command in commands)
    assert commands[1].endswith("pytest -q")


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci
    assert quickstart_commands()[1] in ci.splitlines()


def test_ci_installs_chromium_before_the_tests_and_requires_the_browser_tests():
    """The report's browser tests run in CI (tests/browser_checks.py): Chromium is installed before the
    test command, and XURS_BROWSER_REQUIRED turns their skip-without-a-browser into a failure."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    test_line = lines.index(quickstart_commands()[1])
    install = next(i for i, line in enumerate(lines) if "install -y" in line and "chromium" in line)
    required = lines.index("export XURS_BROWSER_REQUIRED=1")
    assert install < test_line
    assert required < test_line
