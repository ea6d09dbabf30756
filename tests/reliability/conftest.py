"""Shared setup of the reliability tests: import paths, the stage fork server, and a reference project.

The reference project runs backbone -> prepare -> train -> predict -> attribute once per test session
(each stage a separate process, see ``reliability_proc``); tests copy the artifacts they start from and
compare what they produce with the reference's outputs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _path in (str(ROOT), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from reliability_proc import run_ok  # noqa: E402
from reliability_project import STAGES, write_project  # noqa: E402


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project in which every stage up to ``attribute`` ran once, uninterrupted."""
    project = write_project(tmp_path_factory.mktemp("reference") / "project")
    for stage in STAGES:
        run_ok(project, stage)
    return project
