"""``xurs sweep``: a Hydra multirun of whole experiments, each its own DVC experiment. Here the expansion and
the launcher composition; tests/foundation/test_foundation_experiments.py runs a sweep end to end from a fresh
clone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from smoke_project import BIN, copy_sources, run_any, run_ok
from terminal import as_under_a_terminal

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
            overrides=[
                "experiment=smoke",
                "hydra/launcher=submitit_slurm",
                "hydra.launcher.partition=gpu",
                "hydra.launcher.gpus_per_node=1",
                "hydra.launcher.timeout_min=240",
            ],
            return_hydra_config=True,
        )
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert (launcher.partition, launcher.gpus_per_node, launcher.timeout_min) == ("gpu", 1, 240)
    assert cfg.experiment_name == "smoke"


def _sweep(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_any([str(BIN / "xurs"), "sweep", *args], work)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project directory: the code and conf/ (``xurs sweep`` runs from its root)."""
    return copy_sources(tmp_path / "xurs")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["experiment=smoke", "train.lr_head=1e-3,nan"], ["sweep point 1", "train.lr_head=nan"]),
        (["experiment=smoke", "+train.lr_haed="], ["'train.lr_haed'", "did you mean 'train.lr_head'"]),
        (["--stage", "predcit", "experiment=smoke"], ["--stage 'predcit'", "did you mean 'predict'"]),
        (["experiment=smoke", "train.seed=[1"], ["train.seed=[1"]),
    ],
    ids=["second-point-refused", "added-misspelt-key", "misspelt-stage", "bad-syntax"],
)
def test_a_refused_point_or_option_stops_the_sweep_before_any_point_runs(
    project: Path, args: list[str], words: list[str]
) -> None:
    result = _sweep(project, "--dry-run", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert " exp run " not in result.stdout, result.stdout  # not even the first, valid point
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    (line,) = result.stderr.strip().splitlines()
    for word in words:
        assert word in line, line


def test_every_refused_point_is_listed_at_once(project: Path) -> None:
    result = _sweep(project, "--dry-run", "experiment=smoke", "train.seed=7,-1", "train.lr_head=nan,1e-3")
    assert result.returncode == 2
    listed = [line for line in result.stderr.splitlines() if line.startswith("sweep point ")]
    assert [line.split(" [")[0] for line in listed] == ["sweep point 0", "sweep point 2", "sweep point 3"]
    assert "3 of 4 points refused" in result.stderr.splitlines()[-1]


def test_a_failed_point_is_reported_and_the_others_still_run(project: Path, tmp_path: Path) -> None:
    """One line per point at the end: a failed ``dvc exp run`` is named, the next point runs all the same."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "dvc").write_text(
        f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\ncase "$*" in *"-n sweep-0"*) exit 3;; esac\n'
    )
    (fake / "dvc").chmod(0o755)
    env_path = f"{fake}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        [str(BIN / "xurs"), "sweep", "--stage", "check", "experiment=smoke", "train.seed=7,17"],
        cwd=project,
        env={**os.environ, "PATH": env_path, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert len((tmp_path / "calls").read_text().splitlines()) == 2  # the second point ran after the failure
    assert "  sweep-0: failed (exit 3)" in result.stdout
    assert "  sweep-1: finished" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == "xurs sweep: 1 of 2 points did not finish: sweep-0"
    assert "Traceback" not in result.stderr


def test_the_sweep_runs_only_the_config_dir_dvc_composes(project: Path) -> None:
    """``dvc exp run -S`` composes DVC's ``hydra.config_dir``: ``--conf`` naming another directory is refused
    (the points would run a config other than the one checked) until DVC is pointed at it."""
    dvc = str(BIN / "dvc")
    run_ok([dvc, "init", "--no-scm", "-q"], project)
    run_ok([dvc, "config", "hydra.enabled", "true"], project)
    shutil.copytree(project / "conf", project / "conf2")
    result = _sweep(project, "--dry-run", "--conf", "conf2", "experiment=smoke")
    assert result.returncode == 2
    assert "--conf conf2" in result.stderr
    assert "dvc config --local hydra.config_dir conf2" in result.stderr
    run_ok([dvc, "config", "--local", "hydra.config_dir", "conf2"], project)
    sweep = [str(BIN / "xurs"), "sweep", "--dry-run", "--conf", "conf2", "experiment=smoke"]
    assert " exp run " in run_ok(sweep, project).stdout
    result = _sweep(project, "--dry-run", "experiment=smoke")  # without --conf: DVC's directory, conf2
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", ["a b", "../x", "", "x/y", "-x", "a..b"])
def test_a_name_dvc_cannot_take_is_refused_before_any_point_runs(project, monkeypatch, capsys, name) -> None:
    """Checked when each point ran, it failed point after point; now once, before the first."""
    monkeypatch.chdir(project)
    assert xurs(["sweep", "--dry-run", f"--name={name}", "experiment=smoke", "train.seed=7,17"]) == 2
    out, err = capsys.readouterr()
    assert " exp run " not in out
    (line,) = err.strip().splitlines()
    assert f"--name {name!r}: not an experiment name" in line


def test_a_name_longer_than_a_git_ref_is_refused_in_a_dry_run(project, monkeypatch, capsys) -> None:
    """A point's experiment name (``<name>-<point>``) is a git ref's last part, at most 255 bytes: one longer
    passed ``--dry-run`` and failed in ``dvc exp run``; now refused before any point, dry run or not."""
    monkeypatch.chdir(project)
    fits = "a" * 253  # its last point, a-1, is 255 bytes
    assert xurs(["sweep", "--dry-run", f"--name={fits}", "experiment=smoke", "train.seed=7,17"]) == 0
    capsys.readouterr()
    assert xurs(["sweep", "--dry-run", f"--name={fits}a", "experiment=smoke", "train.seed=7,17"]) == 2
    out, err = capsys.readouterr()
    assert " exp run " not in out
    (line,) = err.strip().splitlines()
    assert "point 1's name would be 256 bytes, above a git ref's 255" in line


def test_a_point_given_twice_is_refused(project, monkeypatch, capsys) -> None:
    """``train.seed=7,7`` ran the same experiment twice; so did ``train=smoke,smoke`` (the same option)."""
    monkeypatch.chdir(project)
    for sweep in (["train.seed=7,7"], ["train=smoke,smoke", "train.seed=7"]):
        assert xurs(["sweep", "--dry-run", "experiment=smoke", *sweep]) == 2
        out, err = capsys.readouterr()
        assert " exp run " not in out
        (line,) = err.strip().splitlines()
        assert line.startswith("xurs sweep: error: sweep point 1 ['experiment=smoke', "), line
        assert "the same config as point 0 ['experiment=smoke', " in line
        assert line.endswith("; nothing was run")


def test_ctrl_c_lets_dvc_clean_up_and_ends_with_one_line_per_point(project: Path, tmp_path: Path) -> None:
    """Ctrl-C during the first point: DVC (here a stand-in that takes a second to clean up, as ``dvc exp
    run`` removes its temporary copy) gets to finish, so no run stays "running"; the sweep prints each
    point's outcome, runs no later point, and exits 130 without a traceback."""
    import signal
    import time

    calls, fake = tmp_path / "calls", tmp_path / "bin"
    fake.mkdir()
    (fake / "dvc").write_text(  # `dvc exp run` only (others answer at once), announced once Ctrl-C is trapped
        '#!/bin/sh\ncase "$*" in *"exp run"*) ;; *) exit 0 ;; esac\n'
        f"trap 'kill $pid; sleep 1; echo cleaned >> {calls}; exit 130' INT\n"
        f'echo "run $*" >> {calls}\nsleep 60 & pid=$!\nwait $pid\n'
    )
    (fake / "dvc").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(project)}
    command = [str(BIN / "xurs"), "sweep", "--stage", "check", "experiment=smoke", "train.seed=7,17,23"]
    process = subprocess.Popen(
        command,
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # as a terminal would (a blocked or ignored Ctrl-C is inherited: the sweep never saw it and ran on
        # to the next point)
        preexec_fn=as_under_a_terminal,
    )
    deadline = time.monotonic() + 120
    while not (calls.is_file() and "run " in calls.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, out + err
    assert calls.read_text().splitlines() == [calls.read_text().splitlines()[0], "cleaned"]  # one point only
    assert "Traceback" not in err, err
    assert "KeyboardInterrupt" not in err, err
    assert "  sweep-0: interrupted (Ctrl-C; DVC ended the run and kept nothing of it)" in out
    for name in ("sweep-1", "sweep-2"):
        assert f"  {name}: not run (the sweep was interrupted before it)" in out
    assert err.strip().splitlines()[-1] == "xurs sweep: interrupted; 0 of 3 points finished"
