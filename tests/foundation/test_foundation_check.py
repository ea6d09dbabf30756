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
        for name, stage in stages.items()
        for o in stage.get("outs", []) + stage.get("metrics", [])
    }

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


def test_check_refuses_record_ids_the_data_does_not_have_before_prepare_ran(tmp_path, capsys, monkeypatch):
    """Issue 55, item 5: ``record_ids=[nosuch]`` passed ``xurs check``; before ``prepare`` has run it is
    checked against the records the data section describes (here synthetic, generated in memory)."""
    from xurs_pipeline.config import validate
    from xurs_pipeline.data.dataset import load_records

    monkeypatch.chdir(tmp_path)  # no prepared prompts here
    real = load_records(validate(yaml.safe_load((ROOT / "params.yaml").read_text())).data)[0].record_id
    bad = _params(tmp_path, lambda p: p["attribution"].update(record_ids=["nosuch", real]))
    assert main(["check", "--params", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "attribution.record_ids: ['nosuch'] not in the synthetic_direct records" in err
    good = _params(tmp_path, lambda p: p["attribution"].update(record_ids=[real]))
    assert main(["check", "--params", str(good)]) == 0


def test_max_questions_with_record_ids_is_refused_naming_both_keys(tmp_path, capsys):
    """Issue 55, item 5: ``record_ids`` plus ``max_questions=1`` explained every id; one meaning now:
    ``record_ids`` names exactly the questions, so ``max_questions`` must be 0 with it."""
    bad = _params(tmp_path, lambda p: p["attribution"].update(record_ids=["a", "b"], max_questions=1))
    assert main(["check", "--params", str(bad)]) == 2
    assert "attribution.max_questions=1 with attribution.record_ids" in capsys.readouterr().err
    alone = _params(tmp_path, lambda p: p["attribution"].update(max_questions=1))
    assert main(["check", "--params", str(alone)]) == 0


def test_an_empty_key_is_one_line_naming_it(tmp_path, capsys):
    """``seed:`` left empty (YAML null) printed OmegaConf's several-line dump; now one line naming the key,
    a list item's too."""
    for edit, key in (
        (lambda p: p["attribution"].update(seed=None), "attribution.seed"),
        (lambda p: p["evaluation"].update(repeat_seeds=[17, None]), "evaluation.repeat_seeds[1]"),
        (lambda p: p.update(experiment_name=None), "experiment_name"),
    ):
        bad = _params(tmp_path, edit)
        assert main(["check", "--params", str(bad)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert f"{key} is empty (null): every setting takes a value" in line
