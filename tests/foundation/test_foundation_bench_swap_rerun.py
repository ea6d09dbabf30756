"""``bench/swap_rerun.py``'s hard-linked copy (docs/swap-control.md's reruns): the copy gets the changed
keys in its own params file, the project keeps its own and shares every other file; an unknown key or a
malformed KEY=VALUE is refused, naming it, before anything is copied."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest
import yaml
from bench_scripts import load_bench_script

from xurs_pipeline.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def swap_rerun():
    return load_bench_script("swap_rerun")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project" / "data").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", tmp_path / "project" / "params.yaml")
    (tmp_path / "project" / "data" / "out.txt").write_text("finished")
    return tmp_path / "project"


def test_the_copy_changes_its_own_params_and_shares_the_rest(swap_rerun, project, monkeypatch) -> None:
    monkeypatch.chdir(project.parent)
    before = (project / "params.yaml").read_text()
    cfg = swap_rerun.linked_copy(project, project.parent / "copy", {"attribution.target_fn": "entropy"})
    copy = project.parent / "copy"
    assert Path.cwd() == copy.resolve()
    assert cfg.attribution.target_fn == "entropy"
    assert yaml.safe_load((copy / "params.yaml").read_text())["attribution"]["target_fn"] == "entropy"
    assert (project / "params.yaml").read_text() == before  # the project's own file is untouched
    assert (copy / "data/out.txt").stat().st_ino == (project / "data/out.txt").stat().st_ino
    swap_rerun.remove_outputs([copy / "data/out.txt"])
    assert (project / "data/out.txt").read_text() == "finished"


def test_unknown_keys_and_malformed_settings_are_refused(swap_rerun, project, monkeypatch) -> None:
    monkeypatch.chdir(project.parent)
    with pytest.raises(SystemExit, match=r"no key 'attribution\.target_function'"):
        swap_rerun.linked_copy(project, project.parent / "c1", {"attribution.target_function": "entropy"})
    with pytest.raises(SystemExit, match=r"no section 'atribution'"):
        swap_rerun.linked_copy(project, project.parent / "c2", {"atribution.target_fn": "entropy"})
    with pytest.raises(ConfigError, match="target_fn"):
        swap_rerun.linked_copy(project, project.parent / "c3", {"attribution.target_fn": "entropie"})
    assert not any((project.parent / c).exists() for c in ("c1", "c2", "c3"))  # refused before copying
    assert swap_rerun.parse_change("attribution.n_samples=64") == ("attribution.n_samples", 64)
    with pytest.raises(argparse.ArgumentTypeError, match="expected KEY=VALUE"):
        swap_rerun.parse_change("attribution.target_fn")
