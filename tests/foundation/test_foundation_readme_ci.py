"""The README's Quickstart is exactly two one-line commands a user pastes as printed; CI runs the second one
verbatim and the first on the tiny `smoke` experiment; the README's first Python call prints what the README
shows."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CPU_TORCH = "pip install -q torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu"
SMOKE = "xurs params experiment=smoke && "  # what CI puts before command 1's `dvc repro`


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def quickstart_commands(readme: str | None = None) -> list[str]:
    section = (readme or _readme()).split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def reduced(command_1: str) -> str:
    """Command 1 as CI runs it: the smoke experiment composed before its final `dvc repro`."""
    assert command_1.endswith(" && dvc repro")
    return command_1.removesuffix("dvc repro") + SMOKE + "dvc repro"


def ci_lines() -> list[str]:
    return (ROOT / ".ci" / "run").read_text().splitlines()


def test_quickstart_is_two_one_line_commands_that_install_the_cpu_build():
    """Pasteable as printed on a CPU machine: each line makes its venv and installs PyTorch's CPU build."""
    commands = quickstart_commands()
    assert len(commands) == 2
    assert commands[0].endswith(" && dvc repro")
    assert commands[1].endswith(" && ruff check . && pytest -q")
    assert all(
        c.startswith("python3 -m venv .venv && . .venv/bin/activate && " + CPU_TORCH) for c in commands
    )
    assert '-e ".[dev]"' in commands[1]


def test_ci_runs_command_2_verbatim_then_command_1_on_smoke():
    lines = ci_lines()
    assert "set -euo pipefail" in lines
    command_1, command_2 = quickstart_commands()
    assert command_2 in lines
    assert reduced(command_1) in lines
    assert lines.index(command_2) < lines.index(reduced(command_1))
    assert lines.index(reduced(command_1)) < lines.index("test -s results/html/index.html")


def test_ci_runs_the_second_job_in_command_2s_environment():
    """The tests addopts leave out of ``pytest -q`` (marker ``second_job``) run right after command 2."""
    lines = ci_lines()
    _, command_2 = quickstart_commands()
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "not second_job" in addopts
    assert "pytest -q -m second_job" in lines[lines.index(command_2) + 1 :]


def test_a_changed_readme_command_breaks_the_ci_check():
    readme = _readme()
    changed = quickstart_commands(readme.replace("&& dvc repro\n", "&& dvc repro --force\n", 1))
    assert changed[0].endswith("--force")
    assert changed[0] not in ci_lines()
    try:
        reduced(changed[0])
    except AssertionError:
        pass
    else:
        raise AssertionError("a command 1 that does not end in `dvc repro` must be refused")
    changed = quickstart_commands(readme.replace("ruff check . && pytest -q", "pytest -q", 1))
    assert changed[1] not in ci_lines()


def test_ci_installs_chromium_before_the_tests_and_requires_the_browser_tests():
    """The report's browser tests run in CI (tests/browser_checks.py): Chromium is installed before the
    test command, and XURS_BROWSER_REQUIRED turns their skip-without-a-browser into a failure."""
    lines = ci_lines()
    test_line = lines.index(quickstart_commands()[1])
    install = next(i for i, line in enumerate(lines) if "install -y" in line and "chromium" in line)
    required = lines.index("export XURS_BROWSER_REQUIRED=1")
    assert install < test_line
    assert required < test_line


def first_python_call(readme: str) -> tuple[str, str]:
    """The README's first ```python block and the ```text block right after it (its printed output)."""
    m = re.search(r"```python\n(.*?)```\s*```text\n(.*?)```", readme, re.S)
    return m.group(1), m.group(2)


def test_the_first_python_call_prints_what_the_readme_shows():
    code, shown = first_python_call(_readme())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout == shown
    wrong = code.replace("FOCAL_SETS.index((0,))", "FOCAL_SETS.index((1,))")  # the 0.5 on {B}
    out = subprocess.run([sys.executable, "-c", wrong], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout != shown


def test_the_first_python_call_is_on_the_first_screens():
    """Within the first 120 lines, right after the Quickstart."""
    readme = _readme()
    line = readme[: readme.index("```python")].count("\n")
    assert line < 120, line
    assert readme.index("## Quickstart") < readme.index("```python")
