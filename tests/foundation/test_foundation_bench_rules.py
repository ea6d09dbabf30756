"""bench/ holds benchmarks only: no script imports another script or patches the library
(``tests/bench_scripts.rule_breaks``), each rule with a planted script it must catch."""

from __future__ import annotations

import os
import subprocess

from bench_scripts import BENCH, rule_breaks

SCRIPTS = {p.stem for p in BENCH.glob("*.py")}


def test_no_bench_script_imports_another_or_patches_the_library() -> None:
    assert len(SCRIPTS) > 10
    breaks = {p.name: rule_breaks(p.read_text(), SCRIPTS) for p in sorted(BENCH.glob("*.py"))}
    assert {name: found for name, found in breaks.items() if found} == {}


def test_a_script_importing_another_is_caught() -> None:
    source = "import _common as C\nfrom bench_speed import main\nfrom xurs_pipeline.io import write_json\n"
    assert rule_breaks(source, {"_common", "bench_speed"}) == ["imports the bench script bench_speed"]
    assert rule_breaks("import bench_speed.sub\n", {"bench_speed"}) == [
        "imports the bench script bench_speed"
    ]


def test_a_script_importing_a_moved_library_module_is_caught() -> None:
    """The import of a module that moved (its old path) is caught before anyone runs the script."""
    moved = "from xurs_pipeline.train.from_artifacts import fit_into\n"
    assert rule_breaks(moved, set()) == [
        "imports xurs_pipeline.train.from_artifacts (no such library module)"
    ]
    gone = "from xurs_pipeline.runs import no_such_function\n"
    assert rule_breaks(gone, set()) == [
        "imports xurs_pipeline.runs.no_such_function (no such library module)"
    ]
    deep = "import xurs_pipeline.no_package.module\n"
    assert rule_breaks(deep, set()) == ["imports xurs_pipeline.no_package (no such library module)"]
    assert rule_breaks("from xurs_pipeline.runs.training import fit_into\n", set()) == []


def test_a_script_patching_the_library_is_caught() -> None:
    planted = "from unittest import mock\nwith mock.patch.object(KronrodSpec, 'lead', f):\n    pass\n"
    assert rule_breaks(planted, set()) == ["imports unittest.mock (patches the library)"]
    assert rule_breaks("import mock\n", set()) == ["imports mock (patches the library)"]
    assert rule_breaks("from unittest import TestCase\n", set()) == []
    swapped = "from xurs_pipeline.attribution import estimators\nestimators.certify = print\n"
    assert rule_breaks(swapped, set()) == ["assigns estimators.certify (patches the library)"]
    aliased = "import xurs_pipeline.attribution.estimators as E\nE.certify = print\n"
    assert rule_breaks(aliased, set()) == ["assigns E.certify (patches the library)"]
    own = "from xurs_pipeline.attribution.certified_diagnosis import Recorder\nr = Recorder()\nr.x = 1\n"
    assert rule_breaks(own, set()) == []


def _stub(bin_dir, name: str, status: str = "") -> None:
    """A ``name`` command that logs its arguments to calls.log (prints ``status`` for ``queue status``)."""
    script = bin_dir / name
    script.write_text(
        f'#!/usr/bin/env bash\necho "{name} $*" >> "{bin_dir}/calls.log"\n'
        f'[[ "$1 $2" == "queue status" ]] && printf "%s\\n" "{status}"\nexit 0\n'
    )
    script.chmod(0o755)


def test_the_gpu_seed_sweep_queues_one_dvc_experiment_per_seed(tmp_path) -> None:
    """``bench/gpu/swap_seeds.sh`` runs the seeds as DVC experiments (``dvc exp run --queue``, ``dvc queue
    start``) and pools them with ``xurs swap-sweep``: no copies of the project. ``dvc``/``xurs`` are stubs
    that log what they were asked."""

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "dvc", "swap-seed5  Success\nswap-seed6  Success")
    _stub(bin_dir, "xurs")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    script = BENCH / "gpu" / "swap_seeds.sh"
    out = tmp_path / "out"
    args = ["bash", str(script), str(out), "2", "/m.gguf", "5", "6", "--", "attribution.device=cuda"]
    result = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    calls = (bin_dir / "calls.log").read_text().splitlines()
    common = "-S experiment=controlled_swap -S model.source=/m.gguf -S attribution.device=cuda"
    assert calls[:3] == [
        f"dvc exp run swap --queue -n swap-seed5 {common} -S data.seed=5",
        f"dvc exp run swap --queue -n swap-seed6 {common} -S data.seed=6",
        "dvc queue start -j 2",
    ]
    assert calls[-1] == f"xurs swap-sweep --label data.seed --out {out / 'sweep'} --overwrite"
    assert not any("tar " in line or "cp -r" in line for line in script.open())
