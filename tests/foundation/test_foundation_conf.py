"""The dataclass schema is the one source of config defaults: each group's default.yaml mirrors it, and
every other option of a group sets only what differs from what it inherits."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from xurs_pipeline.config import RootConfig

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = ("data", "model", "train", "attribution", "evaluation")
# Files that state the paper's settings in full on purpose, and files the default experiment's redesign owns.
SPELLED_OUT = {
    "attribution/paper_llama2",
    "attribution/paper_smollm3",
    "train/lora_llama2",
    "train/lora_smollm3",
    "data/synthetic_local",
}


def _load(group: str, option: str) -> dict[str, Any]:
    return yaml.safe_load((CONF / group / f"{option}.yaml").read_text()) or {}


def inherited(group: str, option: str) -> dict[str, Any]:
    """What ``option`` inherits from the options in its defaults list (composed, before its own keys)."""
    values: dict[str, Any] = {}
    for parent in _load(group, option).get("defaults", []):
        if parent != "_self_":
            values.update(inherited(group, parent))
            values.update({k: v for k, v in _load(group, parent).items() if k != "defaults"})
    return values


def redundant_keys(group: str, option: str) -> list[str]:
    """Keys ``option`` sets to the value it would inherit anyway."""
    base = inherited(group, option)
    return [k for k, v in _load(group, option).items() if k != "defaults" and k in base and base[k] == v]


@pytest.mark.parametrize("group", GROUPS)
def test_default_yaml_mirrors_the_dataclass(group: str):
    own = {k: v for k, v in _load(group, "default").items() if k != "defaults"}
    assert own == asdict(RootConfig())[group]


@pytest.mark.parametrize(
    "name",
    [f"{g}/{p.stem}" for g in GROUPS for p in sorted((CONF / g).glob("*.yaml")) if p.stem != "default"],
)
def test_options_set_only_what_differs(name: str):
    group, option = name.split("/")
    assert _load(group, option).get("defaults"), f"{name} inherits nothing: it must build on {group}/default"
    if name not in SPELLED_OUT:
        assert redundant_keys(group, option) == [], name


def test_a_repeated_default_is_found():
    assert redundant_keys("data", "synthetic_local") == ["cases_per_family"]  # repeats synthetic_v1's 4
    assert redundant_keys("attribution", "paper_smollm3")
