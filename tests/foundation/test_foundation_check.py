"""``xurs check`` and the ``check`` stage: a bad config stops before any stage deletes an output."""

from __future__ import annotations

from pathlib import Path

import yaml

from xurs_pipeline.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _params(tmp_path: Path, edit=None) -> Path:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    if edit:
        edit(params)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def test_check_names_a_misspelt_key_and_writes_no_stamp(tmp_path, capsys):
    bad = _params(tmp_path, lambda p: p["attribution"].update(n_sample=5))
    stamp = tmp_path / "check.json"
    assert main(["check", "--params", str(bad), "--stamp", str(stamp)]) == 2
    assert "n_sample" in capsys.readouterr().err
    assert not stamp.exists()


def test_the_stamp_does_not_change_with_the_config(tmp_path):
    """The check stage's output is a dependency of the first real stage: it must not invalidate it."""
    stamps = []
    for seed in (7, 17):
        good = _params(tmp_path, lambda p, s=seed: p["train"].update(seed=s))
        stamp = tmp_path / f"check{seed}.json"
        assert main(["check", "--params", str(good), "--stamp", str(stamp)]) == 0
        stamps.append(stamp.read_bytes())
    assert stamps[0] == stamps[1]


def test_every_stage_runs_after_check_and_check_watches_every_section():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    check = stages["check"]
    # the whole file, not a list of keys: any edit, a key added by hand included, reruns check first
    assert check["params"] == [{"params.yaml": None}]
    (stamp,) = [next(iter(o)) if isinstance(o, dict) else o for o in check["outs"]]
    producers = {
        (next(iter(o)) if isinstance(o, dict) else o): name
        for name, stage in stages.items() for o in stage.get("outs", []) + stage.get("metrics", [])
    }  # fmt: skip

    def upstream(name: str) -> set[str]:
        found = set()
        for dep in stages[name].get("deps", []):
            owner = producers.get(dep)
            if owner and owner not in found:
                found |= {owner} | upstream(owner)
        return found

    for name in stages:
        if name != "check":
            assert "check" in upstream(name), f"stage {name} could run (and delete its outputs) before check"
    assert stamp in stages["backbone"]["deps"]
