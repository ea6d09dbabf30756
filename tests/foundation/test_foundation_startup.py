"""Stage start-up (issue 18): composing and validating the config, and the stages that only read
artifacts (tables, report), never import torch or transformers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from xurs_pipeline.attribution.config import TARGET_NAMES
from xurs_pipeline.attribution.targets import TARGETS
from xurs_pipeline.evaluation.config import EvaluationConfig

HEAVY = ("torch", "transformers", "peft", "captum")


def _imported(module: str) -> list[str]:
    code = f"import sys, {module}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


LIGHT = (
    "xurs_pipeline.config",
    "stages.__main__",
    "xurs_pipeline.tasks.tables",
    "xurs_pipeline.tasks.report",
)


@pytest.mark.parametrize("module", LIGHT)
def test_light_entry_points_do_not_import_torch(module: str) -> None:
    assert _imported(module) == []


def test_the_check_itself_sees_torch_where_it_is_imported() -> None:
    assert "torch" in _imported("xurs_pipeline.tasks.mask_eval")


def test_target_names_are_the_registry() -> None:
    assert tuple(TARGETS) == TARGET_NAMES
    with pytest.raises(ValueError, match="targets"):
        EvaluationConfig(targets=["width", "nope"])
