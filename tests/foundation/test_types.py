"""The public API and the attribution engine type-check under ``mypy --strict``.

Strict where the public API lives: ``xurs_pipeline.credal`` (ARCHITECTURE.md, "Public API") and the
attribution engine (estimators, quadrature, paths, the EG plan, gradients, the per-question run and its
records). A cold run (fresh cache, as in CI) costs about 15 s of CPU; the second test shows the same command
failing on a planted type error, so a green run means something.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRICT_PACKAGES = ("xurs_pipeline.credal",)
STRICT_MODULES = tuple(
    f"xurs_pipeline.attribution.{name}"
    for name in (
        "config",
        "estimators",
        "gradients",
        "paths",
        "plan",
        "prefix",
        "quadrature",
        "question",
        "records",
    )
)


def mypy(args: list[str], cache: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), "--no-error-summary"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, check=False)


# CI's second job (pyproject.toml's markers): coverage no other test has, and a cold mypy run would be among
# the slowest tests of README command 2's suite
@pytest.mark.second_job
@pytest.mark.slow  # ~15 s of CPU cold; minutes on a loaded machine
def test_the_public_api_and_the_attribution_engine_pass_mypy_strict(tmp_path):
    pytest.importorskip("mypy", reason='mypy is a dev extra: pip install -e ".[dev]"')
    args = [a for p in STRICT_PACKAGES for a in ("-p", p)] + [a for m in STRICT_MODULES for a in ("-m", m)]
    result = mypy(args, tmp_path / "cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_fails_on_a_planted_type_error(tmp_path):
    pytest.importorskip("mypy", reason='mypy is a dev extra: pip install -e ".[dev]"')
    (tmp_path / "planted.py").write_text("def width(x: float) -> float:\n    return str(x)\n")
    result = mypy(["planted.py"], tmp_path / "cache", cwd=tmp_path)
    assert result.returncode == 1
    assert 'Incompatible return value type (got "str", expected "float")' in result.stdout
