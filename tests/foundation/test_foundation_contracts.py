"""dvc.yaml is the generation of the declarations; every stage depends on every file it imports, on the
MedQA data it reads and on exactly the params keys it reads; every project error derives from XursError."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from xurs_pipeline.attribution.records import COLUMNS as ATTRIBUTION_RECORD_COLUMNS
from xurs_pipeline.config import compose, validate
from xurs_pipeline.contracts import ARTIFACTS, STAGES, param_keys, stage_hash
from xurs_pipeline.dvc_yaml import missing_code_deps, render, stage_code
from xurs_pipeline.errors import XursError
from xurs_pipeline.evaluation import artifacts as evaluation_artifacts
from xurs_pipeline.tasks.runner import check_declared_inputs

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = yaml.safe_load((ROOT / "dvc.yaml").read_text())
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())


def test_dvc_yaml_is_the_generation_of_the_declarations():
    assert (ROOT / "dvc.yaml").read_text() == render(PARAMS, ROOT), "dvc.yaml drifted: run `xurs dvc-yaml`"


def test_every_stage_depends_on_every_project_file_it_imports():
    assert missing_code_deps(COMMITTED, ROOT) == {}
    # ...and the check finds a file left out (io.py, which every stage imports), also behind a folder dep.
    pruned = {
        "stages": {
            n: {**s, "deps": [d for d in s["deps"] if d != "xurs_pipeline/io.py"]}
            for n, s in COMMITTED["stages"].items()
        }
    }
    assert set(missing_code_deps(pruned, ROOT)) == set(STAGES)
    assert all(m == ["xurs_pipeline/io.py"] for m in missing_code_deps(pruned, ROOT).values())
    pruned["stages"]["gates"]["deps"].append("xurs_pipeline")
    assert "gates" not in missing_code_deps(pruned, ROOT)


_LOADED = """
import importlib, json, sys
out = {}
for stage in sys.argv[1:]:
    for name in [m for m in sys.modules if m.split(".")[0] in ("stages", "xurs_pipeline")]:
        del sys.modules[name]
    sys.argv = ["stages", stage]
    importlib.import_module("stages.__main__")
    importlib.import_module("xurs_pipeline.tasks." + stage)
    out[stage] = sorted({m.__file__ for n, m in sys.modules.items()
                         if n.split(".")[0] in ("stages", "xurs_pipeline") and getattr(m, "__file__", None)})
print(json.dumps(out))
"""


def test_the_static_closure_covers_every_module_importing_a_stage_loads():
    """An independent computation: the project modules Python actually loads when it imports the entry
    point and each stage's task module, as ``python -m stages <name>`` does (imports inside functions run
    later, so the static closure may hold more)."""
    result = subprocess.run(
        [sys.executable, "-c", _LOADED, *STAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    loaded = json.loads(result.stdout)
    for name in STAGES:
        files = {str(Path(f).resolve().relative_to(ROOT)) for f in loaded[name]}
        closure = set(stage_code(name, ROOT))
        assert files <= closure, (name, sorted(files - closure))
        assert files, name


def test_an_added_import_becomes_a_dep(tmp_path: Path):
    for name in ("stages", "xurs_pipeline"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    gates = tmp_path / "xurs_pipeline" / "tasks" / "gates.py"
    assert "xurs_pipeline/reporting/html.py" not in stage_code("gates", tmp_path)
    gates.write_text(gates.read_text() + "\n\ndef _later():\n    from xurs_pipeline.reporting import html\n")
    assert "xurs_pipeline/reporting/html.py" in stage_code("gates", tmp_path)
    missing = missing_code_deps(COMMITTED, tmp_path)
    assert set(missing) == {"gates"}
    assert "xurs_pipeline/reporting/html.py" in missing["gates"]


def test_mask_eval_reads_no_gate_threshold_and_gates_read_only_gate_keys():
    keys = param_keys("mask_eval", PARAMS)
    assert keys
    assert not [k for k in keys if k.startswith(("evaluation.gate", "evaluation.numerics"))]
    assert param_keys("gates", PARAMS) == ["evaluation.gates", "evaluation.gate_splits"]
    cfg = validate(PARAMS)
    moved = asdict(cfg)
    moved["evaluation"]["gates"]["accuracy_min"] -= 0.01
    assert stage_hash("mask_eval", validate(moved)) == stage_hash("mask_eval", cfg)
    moved["evaluation"]["n_random"] += 1
    assert stage_hash("mask_eval", validate(moved)) != stage_hash("mask_eval", cfg)


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml")))
def test_every_declared_param_key_exists_in_every_experiment(experiment: str):
    composed = compose([f"experiment={experiment}"], conf_dir=ROOT / "conf")
    for name in STAGES:
        for key in param_keys(name, composed):
            node = composed
            for part in key.split("."):
                assert isinstance(node, dict), (name, key)
                assert part in node, (name, key)
                node = node[part]


def test_medqa_files_are_a_dep_of_prepare_only_for_local_medqa_data(tmp_path: Path):
    def prepare_deps(**data: object) -> list[str]:
        composed = {**PARAMS, "data": {**PARAMS["data"], **data}}
        return yaml.safe_load(render(composed, ROOT))["stages"]["prepare"]["deps"]

    assert "${data.medqa_path}" in prepare_deps(source="medqa", medqa_hub="")
    assert "${data.medqa_path}" not in prepare_deps(source="synthetic_v1")
    assert "${data.medqa_path}" not in prepare_deps(source="medqa", medqa_hub="GBaker/MedQA-USMLE-4-options")
    # A stage refuses to run when dvc.yaml lacks an input the config makes it read.
    medqa = {**PARAMS, "data": {**PARAMS["data"], "source": "medqa"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(medqa))
    (tmp_path / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    with pytest.raises(XursError, match=r"data\.medqa_path.*xurs dvc-yaml"):
        check_declared_inputs("prepare", tmp_path)
    (tmp_path / "dvc.yaml").write_text(render(medqa, ROOT))
    check_declared_inputs("prepare", tmp_path)


def test_prepare_lists_only_its_sources_data_keys_and_a_stage_refuses_a_dvc_yaml_without_them(tmp_path: Path):
    """Issue 56: every data.* key was a param of prepare and of every later stage; now prepare lists the data
    keys of the configured source (contracts.DATA_KEYS), no other stage lists data keys but data.source,
    and a dvc.yaml rendered for another source is refused by the stage it would leave stale."""
    synthetic = {**PARAMS, "data": {**PARAMS["data"], "source": "synthetic_v1"}}
    medqa = {**PARAMS, "data": {**PARAMS["data"], "source": "medqa"}}
    listed = {
        name: yaml.safe_load(render(c, ROOT))["stages"]["prepare"]["params"]
        for name, c in (("synthetic", synthetic), ("medqa", medqa))
    }
    assert "data.medqa_path" in listed["medqa"]
    assert "data.medqa_path" not in listed["synthetic"]
    assert "data.families" in listed["synthetic"]
    assert "data.families" not in listed["medqa"]
    assert "data.v1_flaws" in listed["synthetic"]
    for name in STAGES:
        data_keys = {k for k in param_keys(name, synthetic) if k.startswith("data.")}
        if name not in ("check", "prepare", "tables", "report"):
            assert data_keys <= {"data.source"}, (name, data_keys)
    (tmp_path / "params.yaml").write_text(
        yaml.safe_dump({**medqa, "data": {**medqa["data"], "medqa_hub": "x/y"}})
    )
    (tmp_path / "dvc.yaml").write_text(render(synthetic, ROOT))
    with pytest.raises(XursError, match=r"data\.medqa_files.*params of stage prepare.*xurs dvc-yaml"):
        check_declared_inputs("prepare", tmp_path)
    check_declared_inputs("train", tmp_path)  # train lists no data key: either dvc.yaml serves it
    (tmp_path / "dvc.yaml").write_text(render({**medqa, "data": {**medqa["data"], "medqa_hub": "x/y"}}, ROOT))
    check_declared_inputs("prepare", tmp_path)
    swap = {**PARAMS, "data": {**PARAMS["data"], "source": "synthetic_swap"}}  # `xurs sweep experiment=...`
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(swap))
    (tmp_path / "dvc.yaml").write_text(render(synthetic, ROOT))
    check_declared_inputs("prepare", tmp_path)  # one list for every synthetic source: no new dvc.yaml


def test_the_prompts_and_run_hashes_cover_exactly_the_keys_the_data_reads():
    """The prompts' provenance (and through it the classifier's and the attributions') changes with a data
    key of the configured source, never with another source's key or an attribution key."""
    from xurs_pipeline.config import attribution_fingerprint, train_run_hash
    from xurs_pipeline.data.dataset import data_config_hash

    cfg = validate(PARAMS)  # synthetic data
    same = {
        "data": {"medqa_path": "elsewhere", "medqa_files": "x/{split}.jsonl", "medqa_carve": "dev"},
        "attribution": {"n_samples": 99, "record_ids": ["a"], "split": "dev"},
    }
    other = {"data": {"seed": 1, "families": [4, 1, 1]}, "train": {"lr_head": 0.5}}

    def moved(changes: dict) -> tuple[str, str]:
        composed = asdict(cfg)
        for section, keys in changes.items():
            composed[section].update(keys)
        changed = validate(composed)
        return data_config_hash(changed.data), train_run_hash(changed)

    base = (data_config_hash(cfg.data), train_run_hash(cfg))
    assert moved({"data": same["data"]}) == base
    assert moved({"attribution": same["attribution"]})[1] == base[1]
    assert moved({"data": other["data"]})[0] != base[0]
    assert moved({"data": other["data"]})[1] != base[1]
    assert moved({"train": other["train"]}) == (base[0], moved({"train": other["train"]})[1]) != base
    fingerprint = attribution_fingerprint(cfg)
    assert (
        attribution_fingerprint(validate({**asdict(cfg), "data": {**asdict(cfg.data), "medqa_path": "x"}}))
        == fingerprint
    )
    assert (
        attribution_fingerprint(validate({**asdict(cfg), "train": {**asdict(cfg.train), "seed": 8}}))
        != fingerprint
    )


def test_comparison_runs_are_deps_of_checks():
    composed = {**PARAMS, "evaluation": {**PARAMS["evaluation"], "comparison_runs": ["attribute_ig"]}}
    deps = yaml.safe_load(render(composed, ROOT))["stages"]["checks"]["deps"]
    assert "${paths.artifacts}/attribute_ig" in deps


def test_declared_columns_agree_with_writers_and_readers():
    assert set(ARTIFACTS["attributions"].columns) <= set(ATTRIBUTION_RECORD_COLUMNS)
    assert set(evaluation_artifacts.PROMPT_COLUMNS_USED) <= set(ARTIFACTS["prompts"].columns)
    assert set(evaluation_artifacts.PREDICTION_COLUMNS_USED) <= set(ARTIFACTS["predictions"].columns)
    writers = {a.writer for a in ARTIFACTS.values()}
    assert writers == set(STAGES)
    for stage in STAGES.values():
        assert all(name in ARTIFACTS and ARTIFACTS[name].writer != stage.name for name in stage.reads)


def test_every_project_error_derives_from_xurs_error():
    import xurs_pipeline.attribution.gradients as gradients
    import xurs_pipeline.attribution.inputs as inputs
    import xurs_pipeline.attribution.question as question
    import xurs_pipeline.config as config
    import xurs_pipeline.data.records as records
    import xurs_pipeline.evaluation.comparisons as comparisons
    import xurs_pipeline.evaluation.masking as masking
    import xurs_pipeline.io as io

    errors = [
        gradients.AttributionMemoryError,
        inputs.AttributionInputError,
        question.NonFiniteError,
        config.ConfigError,
        records.DataError,
        comparisons.RunMismatchError,
        masking.InsufficientEligibleError,
        io.ArtifactError,
    ]
    assert all(issubclass(e, XursError) for e in errors)
    assert not issubclass(RuntimeError, XursError)


def test_data_readme_points_to_the_generated_outputs_and_git_ignores_them():
    """data/README.md sends readers to docs/outputs.md, which lists every artifact (generated from these
    declarations: tests/foundation/test_foundation_outputs.py); git ignores the outputs and a MedQA copy."""
    readme = (ROOT / "data" / "README.md").read_text()
    assert "(../docs/outputs.md)" in readme
    paths = ["data/prepared/prompts.parquet", "data/medqa/dev.jsonl", "data/README.md"]
    check = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True)
    ignored = check.stdout.split()
    assert ignored == ["data/prepared/prompts.parquet", "data/medqa/dev.jsonl"]


def test_every_output_git_ignores_is_cached_by_dvc():
    """An experiment's commit holds only what git tracks: an output under the git-ignored data/ reaches it
    only through DVC's cache (dvc.lock's hash), so none may be ``cache: false`` (its metrics would be
    missing from ``dvc exp show`` in every experiment)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    entries = {
        next(iter(entry)) if isinstance(entry, dict) else entry: entry
        for stage in stages.values()
        for entry in [*stage.get("outs", []), *stage.get("metrics", [])]
    }
    paths = {
        name.replace("${paths.artifacts}", "data").replace("${paths.results}", "results"): entry
        for name, entry in entries.items()
    }
    check = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True)
    ignored = check.stdout.split()
    assert "data/predict/headline.json" in ignored  # the metric the bug report saw missing
    cached = {
        p: not isinstance(e, dict) or next(iter(e.values())).get("cache", True) for p, e in paths.items()
    }
    assert len(cached) == sum(len(stage.writes) for stage in STAGES.values())  # every declared output
    assert [p for p in ignored if not cached[p]] == []


def test_the_cli_prints_a_project_error_in_one_line_and_keeps_a_bugs_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    from xurs_pipeline.cli import main
    from xurs_pipeline.commands import dvc_yaml

    assert main(["dvc-yaml", "--params", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"xurs dvc-yaml: error: {tmp_path / 'missing.yaml'}: not found")
    assert "\n" not in err

    def bug(*_: object) -> int:
        raise RuntimeError("CUDA error: an illegal memory access")

    monkeypatch.setattr(dvc_yaml, "write", bug)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(PARAMS))
    with pytest.raises(RuntimeError, match="illegal memory access"):
        main(["dvc-yaml", "--params", str(tmp_path / "params.yaml"), "--out", str(tmp_path / "dvc.yaml")])
