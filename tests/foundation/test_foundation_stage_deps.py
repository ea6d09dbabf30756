"""Stages depend on what they run, read from ``dvc.yaml`` as DVC reads it: the code every stage lists is the
runner and the config schema (at most 20 files), the swap stage lists the few params it reads, and an edit
inside ``evaluation/swap/`` reruns only the stages of the swap control and those that read its study."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from xurs_pipeline.contracts import ARTIFACTS, STAGES

ROOT = Path(__file__).resolve().parents[2]
DVC = yaml.safe_load((ROOT / "dvc.yaml").read_text())
COMMON_MAX = 20  # code files every stage lists
SWAP_PARAMS_MAX = 20
SWAP_CODE = "xurs_pipeline/evaluation/swap/"
SWAP_ARTIFACTS = {"swap_model", "swap_attributions", "swap_study"}


def code(stage: Mapping[str, Any]) -> set[str]:
    return {str(d) for d in stage["deps"] if str(d).endswith(".py")}


def common_code(dvc: Mapping[str, Any]) -> set[str]:
    """The code files every stage of ``dvc`` lists."""
    return set.intersection(*(code(stage) for stage in dvc["stages"].values()))


def swap_stages() -> set[str]:
    """The stages that write or read an artifact of the swap control."""
    return {n for n, s in STAGES.items() if SWAP_ARTIFACTS & {*s.reads, *(a.name for a in s.writes)}}


def stales_outside_swap(dvc: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per file under ``evaluation/swap/``, the stages outside :func:`swap_stages` that list it."""
    found: dict[str, list[str]] = {}
    for name, stage in dvc["stages"].items():
        for path in sorted(f for f in code(stage) if f.startswith(SWAP_CODE)):
            if name not in swap_stages():
                found.setdefault(path, []).append(name)
    return found


def test_every_stage_shares_at_most_the_runner_and_the_config_schema() -> None:
    common = common_code(DVC)
    assert len(common) <= COMMON_MAX, sorted(common)
    assert {"xurs_pipeline/tasks/runner.py", "xurs_pipeline/config.py"} <= common
    assert not any(f.startswith(("xurs_pipeline/data/synthetic/", SWAP_CODE)) for f in common)
    planted = copy.deepcopy(DVC)  # files every stage imports, up to one over the bar
    for stage in planted["stages"].values():
        stage["deps"] += [f"xurs_pipeline/planted_{j}.py" for j in range(COMMON_MAX + 1 - len(common))]
    assert len(common_code(planted)) == COMMON_MAX + 1


def test_the_swap_stage_lists_the_params_it_reads_not_a_whole_section() -> None:
    params = DVC["stages"]["swap"]["params"]
    assert len(params) <= SWAP_PARAMS_MAX, params
    assert "evaluation.swap_methods" in params
    assert not any(str(p).startswith("attribution.") for p in params)
    whole = [f"attribution.{k}" for k in yaml.safe_load((ROOT / "params.yaml").read_text())["attribution"]]
    assert len(params + whole) > SWAP_PARAMS_MAX  # the section it once listed would break the bar


def test_an_edit_inside_the_swap_package_reruns_only_the_swap_stages() -> None:
    assert {"train_swap", "attribute_swap", "swap", "report"} == swap_stages()
    listing = [n for n, s in DVC["stages"].items() if any(f.startswith(SWAP_CODE) for f in code(s))]
    assert "swap" in listing
    assert stales_outside_swap(DVC) == {}
    planted = copy.deepcopy(DVC)
    planted["stages"]["tables"]["deps"].append(f"{SWAP_CODE}roles.py")
    assert stales_outside_swap(planted) == {f"{SWAP_CODE}roles.py": ["tables"]}
    assert ARTIFACTS["swap_study"].writer == "swap"
