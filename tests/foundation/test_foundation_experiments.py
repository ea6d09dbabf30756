"""Sweeps a user can compare, from a fresh clone: every experiment's metrics in ``dvc exp show`` and its
outputs readable by DVC at the experiment's revision (``dvc.api``), with README's own commands and nothing
force-added to git. One clone per module (``clone``): the two-seed sweep to ``predict`` runs once (Table 8's
route, ``xurs sweep --stage predict``); the gate and queue tests add experiments to it, reusing its stages
through DVC's run-cache."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import dvc.api
import pandas as pd
import pytest
import yaml
from smoke_project import BIN, ROOT, run_any, run_ok
from user_clone import exp_show, experiments, git_clone

PREDICT = "data/predict/headline.json"
PREDICTIONS = "data/predict/predictions.parquet"
GATES = "data/gates/headline.json"
SEEDS = {"sweep-0": 7, "sweep-1": 17}
SEED_READERS = ("train", "predict")  # what a seed changes; the stages before them read no train.* key

# end to end: each test runs DVC experiments of the smoke pipeline (CI's second job: pyproject.toml)
pytestmark = [pytest.mark.slow, pytest.mark.second_job]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A fresh clone where README's Table 8-style sweep ran (two seeds of the smoke experiment to predict),
    and the sweep's output."""
    work = git_clone(tmp_path_factory.mktemp("user") / "xurs")
    sweep = [str(BIN / "xurs"), "sweep", "--stage", "predict", "experiment=smoke", "train.seed=7,17"]
    return work, run_ok(sweep, work).stdout


@pytest.fixture(scope="module")
def clone(swept: tuple[Path, str]) -> Path:
    return swept[0]


def ran(output: str, stage: str) -> int:
    """How often DVC's output says it ran ``stage`` (a run-cache restore does not count)."""
    return output.count(f"Running stage '{stage}'")


def test_each_sweep_point_reruns_only_what_its_seed_changes(swept: tuple[Path, str]) -> None:
    """The second point reuses the first's backbone and prepared prompts (DVC's run-cache: same params, same
    inputs) and trains its own model."""
    _, out = swept
    for stage in ("backbone", "prepare"):
        assert ran(out, stage) == 1, (stage, out[-3000:])
    for stage in SEED_READERS:
        assert ran(out, stage) == 2, (stage, out[-3000:])
    for stage in ("gates", "attribute", "mask_eval", "report"):  # after --stage predict
        assert ran(out, stage) == 0, (stage, out[-3000:])


def params_of(state: dict) -> dict:
    return state["data"]["params"]["params.yaml"]["data"]


def metric(state: dict, path: str) -> dict:
    """One metrics file of an experiment in ``dvc exp show --json``; fails with DVC's error if absent."""
    found = state["data"]["metrics"].get(path, {"error": "not listed"})
    assert "data" in found, (path, found)
    return found["data"]


def read_parquet(work: Path, path: str, rev: str) -> pd.DataFrame:
    """An output as DVC holds it at revision ``rev`` (an experiment's name or commit)."""
    with dvc.api.open(path, repo=str(work), rev=rev, mode="rb") as handle:
        return pd.read_parquet(handle)


def test_the_sweep_lists_each_seeds_accuracy_in_dvc_exp_show(clone: Path) -> None:
    shown = experiments(exp_show(clone))
    assert set(SEEDS) <= set(shown), sorted(shown)
    for name, seed in SEEDS.items():
        state = shown[name]
        assert params_of(state)["train"]["seed"] == seed
        assert params_of(state)["experiment_name"] == "smoke"
        headline = metric(state, PREDICT)
        predictions = read_parquet(clone, PREDICTIONS, state["rev"])
        test = predictions[predictions["split"] == "test"]
        assert len(test) > 0
        assert headline["accuracy"] == pytest.approx(test["correct"].mean(), abs=1e-12), name  # its own run
        assert headline["rescaled"] == pytest.approx(100 * test["rescaled"].mean(), abs=1e-9), name
        history = json.loads(dvc.api.read("data/train/train_metrics.json", repo=str(clone), rev=state["rev"]))
        assert metric(state, "data/train/headline.json")["best_epoch"] == history["best_epoch"], name


def test_plots_diff_draws_both_experiments_training_curves(clone: Path) -> None:
    """``dvc plots diff sweep-0 sweep-1``: each experiment's per-epoch dev loss (DVCLive), one line per
    experiment, equal to the history its own training run recorded."""
    shown = json.loads(run_ok([str(BIN / "dvc"), "plots", "diff", *SEEDS, "--json"], clone).stdout)
    (curve,) = shown["data"]["data/train/dvclive/plots/metrics/loss/dev.tsv"]
    assert curve["revisions"] == list(SEEDS)
    for name in SEEDS:
        history = json.loads(dvc.api.read("data/train/train_metrics.json", repo=str(clone), rev=name))
        drawn = [
            (int(v["step"]), float(v["dev"])) for v in curve["content"]["data"]["values"] if v["rev"] == name
        ]
        assert drawn == [(h["epoch"], pytest.approx(h["dev_loss"], rel=1e-6)) for h in history["history"]], (
            name
        )


def test_a_gates_experiment_is_tabulated_by_gates_sweep(clone: Path) -> None:
    dvc, xurs = str(BIN / "dvc"), str(BIN / "xurs")
    before = set(experiments(exp_show(clone)))
    out = run_ok([dvc, "exp", "run", "gates", "-S", "experiment=smoke", "-S", "train.seed=17"], clone).stdout
    assert (ran(out, "gates"), *(ran(out, s) for s in SEED_READERS)) == (1, 0, 0), out[-3000:]  # run-cache
    shown = experiments(exp_show(clone))
    (name,) = set(shown) - before
    state = shown[name]
    assert params_of(state)["train"]["seed"] == 17
    headline = metric(state, GATES)
    result = run_ok([xurs, "gates-sweep"], clone)  # README's command: results/sweeps/gates_sweep[_<n>].*
    (wrote,) = [line for line in result.stderr.splitlines() if line.startswith("wrote ")]
    (csv,) = [p for p in wrote.removeprefix("wrote ").split(", ") if p.endswith(".csv")]
    table = pd.read_csv(clone / csv)
    assert table["name"].tolist() == [name], result.stderr  # the sweep's points stopped at predict
    for point in SEEDS:
        assert f"left out {point}:" in result.stderr
    row = table.iloc[0]
    gates = read_parquet(clone, "data/gates/gates.parquet", state["rev"])
    dev = gates[gates["split"] == "dev"]
    assert len(dev) > 0
    for _, gate in dev.iterrows():  # every dev gate of the experiment's own gates.parquet is in its row
        column = gate["name"] if gate["group"] == "all" else f"{gate['group']}.{gate['name']}"
        assert row[column] == pytest.approx(gate["value"], nan_ok=True), column
    assert int(row["n_failed"]) == int((~dev["passed"]).sum())
    assert headline["gates"] == len(gates)  # dvc exp show's gate counts come from the same run
    assert headline["gates_failed"] == int((~gates["passed"]).sum())


def test_a_queued_sweep_runs_with_dvc_queue_start_and_reproduces_the_sweep(clone: Path) -> None:
    """``dvc exp run --queue`` + ``dvc queue start`` (DVC's local task queue: no network): the sweep's two
    seeds queued again, each its own experiment whose stages come from the run-cache, with the same
    predictions and headline as the sweep's point of that seed."""
    dvc = str(BIN / "dvc")
    before = set(experiments(exp_show(clone)))
    queue = [dvc, "exp", "run", "predict", "--queue", "-S", "experiment=smoke", "-S", "train.seed=7,17"]
    run_ok(queue, clone)
    run_ok([dvc, "queue", "start", "-j", "1"], clone)
    deadline = time.monotonic() + 1000
    while time.monotonic() < deadline:
        status = run_ok([dvc, "queue", "status"], clone).stdout
        if "Queued" not in status and "Running" not in status:
            break
        time.sleep(1)
    assert status.count("Success") >= 2, status
    shown = experiments(exp_show(clone))
    new = {name: shown[name] for name in set(shown) - before}
    by_seed = {params_of(s)["train"]["seed"]: s for s in new.values()}
    assert sorted(by_seed) == sorted(SEEDS.values()), status
    for point, seed in SEEDS.items():
        queued, swept = by_seed[seed], shown[point]
        predictions = [read_parquet(clone, PREDICTIONS, rev) for rev in (queued["rev"], point)]
        pd.testing.assert_frame_equal(*predictions)
        assert metric(queued, PREDICT) == metric(swept, PREDICT), seed


def test_a_finished_sweep_is_refused_again_unless_resumed(clone: Path) -> None:
    """Rerunning a sweep whose names exist stops before any point runs; ``--resume`` skips those points, and
    ``--overwrite`` reruns each with ``dvc exp run -f`` (shown by a dry run)."""
    sweep = [str(BIN / "xurs"), "sweep", "--stage", "predict", "experiment=smoke", "train.seed=7,17"]
    again = run_any(sweep, clone)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "experiments ['sweep-0', 'sweep-1'] exist already" in again.stderr.strip().splitlines()[-1]
    assert " exp run " not in again.stdout
    resumed = run_ok([*sweep, "--resume"], clone).stdout
    assert "  sweep-0: skipped (exists; --resume)" in resumed
    assert "  sweep-1: skipped (exists; --resume)" in resumed
    assert "Running stage" not in resumed
    forced = run_ok([*sweep, "--overwrite", "--dry-run"], clone).stdout
    assert [
        line.split(" exp run ", 1)[1].split(" -n ")[0] for line in forced.splitlines() if " exp run " in line
    ] == [
        "predict --temp -f",
        "predict --temp -f",
    ]


def test_the_sweep_runs_the_config_dir_it_checked(clone: Path) -> None:
    """With DVC pointed at another config directory, each point's params are that directory's."""
    dvc = str(BIN / "dvc")
    conf = clone / "conf_short"
    shutil.copytree(clone / "conf", conf)
    smoke = conf / "train" / "smoke.yaml"
    smoke.write_text(re.sub(r"(?m)^max_epochs: .*$", "max_epochs: 2", smoke.read_text()))
    run_ok([dvc, "config", "--local", "hydra.config_dir", "conf_short"], clone)
    try:
        sweep = [str(BIN / "xurs"), "sweep", "--conf", "conf_short", "--stage", "check", "--name", "short"]
        assert "  short-0: finished" in run_ok([*sweep, "experiment=smoke"], clone).stdout
    finally:
        run_ok([dvc, "config", "--local", "--unset", "hydra.config_dir"], clone)
        shutil.rmtree(conf)
    assert params_of(experiments(exp_show(clone))["short-0"])["train"]["max_epochs"] == 2


def test_the_documented_apply_then_repro_reaches_repro(clone: Path) -> None:
    """docs/sweeps.md's command applies an experiment that stopped before the last stage and goes on to
    ``dvc repro`` (here of the next stage, ``gates``, which sweep-0 did not run)."""
    (line,) = [
        line.split("#")[0].strip()
        for line in (ROOT / "docs" / "sweeps.md").read_text().splitlines()
        if "dvc exp apply <name>" in line and "dvc repro" in line
    ]
    command = line.replace("<name>", "sweep-0").replace("dvc repro", "dvc repro gates")
    result = run_any(["bash", "-c", command], clone)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Running stage 'gates'" in result.stdout, result.stdout  # a stage sweep-0 did not run
    assert yaml.safe_load((clone / "params.yaml").read_text())["train"]["seed"] == SEEDS["sweep-0"]


def test_a_point_that_never_ran_gates_shows_no_gates_of_another_run(clone: Path) -> None:
    """A baseline commit that ran the gates (seed 7, the documented apply-then-repro above), then a sweep
    point stopped at ``check`` with seed 23: its commit keeps the baseline's ``dvc.lock`` entries for predict
    and gates, and ``dvc.api`` serves seed 7's gates at its revision. ``xurs gates-sweep`` listed them as
    the point's; it names the point and why instead."""
    run_ok(["git", "add", "params.yaml", "dvc.lock"], clone)
    run_ok(["git", "commit", "-qm", "baseline: gates of seed 7"], clone)
    baseline = run_ok(["git", "rev-parse", "--abbrev-ref", "HEAD"], clone).stdout.strip()
    sweep = [
        str(BIN / "xurs"),
        "sweep",
        "--stage",
        "check",
        "--name",
        "early",
        "experiment=smoke",
        "train.seed=23",
    ]
    assert "  early-0: finished" in run_ok(sweep, clone).stdout
    result = run_ok([str(BIN / "xurs"), "gates-sweep", "--out", "results/early"], clone)
    assert pd.read_csv(clone / "results/early/gates_sweep.csv")["name"].tolist() == [baseline], result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("left out early-0:")]
    assert line == (
        "left out early-0: data/gates/gates.json: not this experiment's (stage train ran with "
        f"train.seed={SEEDS['sweep-0']}, not train.seed=23)"
    )


def test_gates_sweep_says_a_collected_output_was_collected(clone: Path) -> None:
    """After ``dvc gc -w`` (last: it empties the cache of every experiment's outputs) the gates experiment
    is left out because its output was collected, not because its stage did not run."""
    dvc = str(BIN / "dvc")
    run_ok([dvc, "exp", "run", "gates", "-n", "gated", "-S", "experiment=smoke"], clone)  # stages: run-cache
    run_any([dvc, "exp", "apply", "sweep-1"], clone)  # away from gated's outputs (exit 255: docs/sweeps.md)
    run_ok([dvc, "gc", "-w", "-f"], clone)
    result = run_any([str(BIN / "xurs"), "gates-sweep"], clone)
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("left out gated:")]
    assert "not in the DVC cache" in line, line
    assert "did not run" not in line, line
