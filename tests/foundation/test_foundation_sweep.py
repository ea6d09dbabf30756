"""``xurs sweep``: a Hydra multirun of whole experiments, each its own DVC experiment (issue 17 item 9)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from smoke_project import BIN, commit_baseline, run_ok

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


def _run(args: list[str], cwd: Path) -> str:
    return run_ok(args, cwd).stdout


# With the baseline's dvc.lock and outputs committed (as in a project whose default has run), each point
# reruns only the stages that read the swept key and what depends on them; the rest are up to date.
RERUN = {"check", "mask_eval", "tables", "report"}  # the readers of evaluation.bootstrap_resamples
UNCHANGED = {"backbone", "prepare", "train", "predict", "gates", "attribute"}  # ("checks" reads mask_eval's
# outputs: DVC reruns it only if they changed)


@pytest.mark.slow
def test_a_two_point_smoke_sweep_runs_two_dvc_experiments(smoke_project: Path, tmp_path: Path):
    """The one real end-to-end sweep, from a baseline commit holding the session smoke project's run (its
    dvc.lock, its uncached outputs in git, its DVC cache): each point reruns exactly the stages that read the
    swept key. The sources come from the smoke project's copy: the code its run was made with."""
    status = commit_baseline(smoke_project, tmp_path)
    assert "up to date" in status  # the baseline is the smoke run itself
    sweep = [str(BIN / "xurs"), "sweep", "experiment=smoke", "evaluation.bootstrap_resamples=200,300"]
    out = _run(sweep, tmp_path)
    for stage in RERUN:
        assert out.count(f"Running stage '{stage}'") == 2, (stage, out[-3000:])
    for stage in UNCHANGED:
        assert f"Running stage '{stage}'" not in out, (stage, out[-3000:])
    shown = json.loads(_run([str(BIN / "dvc"), "exp", "show", "--json"], tmp_path))
    experiments = {  # entries: the workspace, then the baseline commit holding its experiments
        e["name"]: e["revs"][0]["data"]
        for entry in shown
        for e in entry.get("experiments") or []
        if e.get("name")
    }
    assert set(experiments) == {"sweep-0", "sweep-1"}
    for name, resamples in (("sweep-0", 200), ("sweep-1", 300)):
        params = experiments[name]["params"]["params.yaml"]["data"]
        assert params["evaluation"]["bootstrap_resamples"] == resamples
        assert params["experiment_name"] == "smoke"
        assert "data/mask_eval/headline.json" in experiments[name]["metrics"]  # the point is complete
