"""``xurs sweep``: a Hydra multirun of whole experiments, each its own DVC experiment. Here the expansion and
the launcher composition; tests/foundation/test_foundation_experiments.py runs a sweep end to end from a fresh
clone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from xurs_pipeline.cli import main as xurs

ROOT = Path(__file__).resolve().parents[2]


def test_a_sweep_expands_into_one_dvc_experiment_per_point(capsys, monkeypatch, tmp_path):
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    assert xurs(["sweep", "--dry-run", "--name", "seeds", "experiment=smoke", "train.seed=7,17"]) == 0
    commands = [line.split() for line in capsys.readouterr().out.splitlines() if " exp run " in line]
    assert [c[1:] for c in commands] == [
        ["exp", "run", "--temp", "-n", f"seeds-{i}", "-S", "experiment=smoke", "-S", f"train.seed={seed}"]
        for i, seed in enumerate((7, 17))
    ]
    # Table 8's correction sweep needs predictions only: --stage stops each point there
    sweep = ["sweep", "--dry-run", "--stage", "predict", "experiment=smoke", "train=head_only,partial"]
    assert xurs(sweep) == 0
    commands = [line.split() for line in capsys.readouterr().out.splitlines() if " exp run " in line]
    assert [c[1:5] + c[-1:] for c in commands] == [
        ["exp", "run", "predict", "--temp", f"train={t}"] for t in ("head_only", "partial")
    ]
    # a bad point stops the sweep before its experiment runs, naming the key
    assert xurs(["sweep", "--dry-run", "experiment=smoke", "train.seed=7,-1"]) == 2
    assert "train.seed=-1" in capsys.readouterr().err


def test_the_readme_submitit_launcher_composes():
    """The README's SLURM route (composition only: no cluster here)."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=["experiment=smoke", "hydra/launcher=submitit_slurm", "hydra.launcher.partition=gpu",
                       "hydra.launcher.gpus_per_node=1", "hydra.launcher.timeout_min=240"],
            return_hydra_config=True,
        )  # fmt: skip
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert (launcher.partition, launcher.gpus_per_node, launcher.timeout_min) == ("gpu", 1, 240)
    assert cfg.experiment_name == "smoke"
