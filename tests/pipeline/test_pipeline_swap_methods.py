"""The swap study's method comparison from a user's fresh clone, on a tiny model: ``xurs sweep`` over two data
seeds of ``controlled_swap`` up to the ``swap`` stage (each a DVC experiment), ``dvc exp show`` listing every
method's metrics (values known exactly asserted: the plan's verdicts on one seed, every method on the
planted two-cue models), and ``xurs swap-sweep`` pooling them into the method x seed table. Sizes only are
shrunk; every other setting is the experiment's."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from smoke_project import BIN, run_ok
from user_clone import exp_show, experiments, git_clone

from xurs_pipeline.evaluation.config import SWAP_METHODS

PLANTED_MECHANISMS = ("linear", "saturated", "cancelling", "interaction")

TINY = [
    "model=tiny",
    "data.families=[8,1,3]",
    "train.max_epochs=1",
    "train.partial_layers=1",
    "attribution.kronrod_max_evals=60",
    "attribution.max_questions=3",
]
pytestmark = [pytest.mark.slow, pytest.mark.second_job]  # a two-seed sweep (CI's second job: pyproject.toml)
MEASURES = ("swap", "swap_low", "agreement", "agreement_low")


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = git_clone(tmp_path_factory.mktemp("swap") / "xurs")
    sweep = [
        str(BIN / "xurs"),
        "sweep",
        "--stage",
        "swap",
        "--name",
        "seed",
        "experiment=controlled_swap",
        *TINY,
        "data.seed=1,2",
    ]
    run_ok(sweep, work)
    return work


def test_every_method_and_model_is_in_dvc_exp_show(swept: Path) -> None:
    exps = experiments(exp_show(swept))
    assert {"seed-0", "seed-1"} <= set(exps)
    for name in ("seed-0", "seed-1"):
        metrics = exps[name]["data"]["metrics"]["data/swap/methods.json"]["data"]
        assert set(SWAP_METHODS) <= set(metrics)
        for method in SWAP_METHODS:
            assert set(MEASURES) <= set(metrics[method]), method
            for measure in ("swap", "agreement"):
                value, low = metrics[method][measure], metrics[method][f"{measure}_low"]
                assert 0.0 <= low <= value <= 1.0
        assert 0.0 <= metrics["as_trained_A"] <= 1.0
        assert 0.0 <= metrics["as_trained_B"] <= 1.0
        assert "as_trained_C" not in metrics  # model C's labels name no cue to be trained on
        assert_planted_values(metrics)
        assert_model_c(metrics)


def assert_model_c(metrics: dict) -> None:
    """Model C, the third model, is read like A and B, per cue order too (the training rule's agreement on
    it is checked pooled, in the sweep table)."""
    assert {"C", "C_order1", "C_order2"} <= set(metrics["paper"]["text_edits"])


def assert_planted_values(metrics: dict) -> None:
    """Values known exactly, through the user's path: the plan's verdicts on one seed (no verdict; the
    baselines never judged), every method scored on the same clear probes of the text edits, and each method
    on the planted two-cue models (evaluation/swap/planted_methods.py)."""
    for name in ("training_rule", "constant", "input_only", "random"):
        assert metrics[name]["verdict"] == "baseline"
    for name in ("paper", "layer_ig", "occlusion_token"):
        assert metrics[name]["verdict"] == "no verdict"  # one seed
    assert len({metrics[m]["text_edits"]["all"]["clear_n"] for m in SWAP_METHODS}) == 1
    assert metrics["layer_ig"]["planted_embeddings"] == dict.fromkeys(PLANTED_MECHANISMS, True)
    assert metrics["occlusion_token"]["planted_embeddings"]["saturated"] is False
    assert metrics["occlusion_span"]["planted_embeddings"]["cancelling"] is False


def test_swap_sweep_pools_the_seeds_counts(swept: Path) -> None:
    """The table's pooled counts are the sum of each experiment's own (read back from DVC, not recomputed);
    the seeds differ in data.seed, a key that changes the result, so the sweep names it (--label)."""
    unlabelled = [str(BIN / "xurs"), "swap-sweep", "--out", "results/unlabelled"]
    unlabelled = subprocess.run(unlabelled, cwd=swept, capture_output=True, text=True, check=False)
    assert unlabelled.returncode == 2
    assert "compare them with --label data.seed" in unlabelled.stderr
    # its own directory: results/sweeps/ holds the kept tables, whose names the command will not reuse
    out = run_ok([str(BIN / "xurs"), "swap-sweep", "--label", "data.seed", "--out", "results/pooled"], swept)
    table = pd.read_csv(swept / "results" / "pooled" / "swap_sweep.csv").set_index("row")
    assert set(SWAP_METHODS) <= set(table.index)
    assert {"data.seed=1", "data.seed=2"} <= set(table.columns)
    assert "| paper |" in out.stdout
    summaries = []
    for name in ("seed-0", "seed-1"):
        show = run_ok([str(BIN / "dvc"), "exp", "show", "--json"], swept)  # the experiment's revision
        rev = experiments(json.loads(show.stdout))[name]["rev"]
        run_ok(["git", "checkout", "-q", rev, "--", "dvc.lock"], swept)
        run_ok([str(BIN / "dvc"), "checkout", "-q", "swap"], swept)
        summaries.append(json.loads((swept / "data/swap/study/summary.json").read_text()))
    for method in SWAP_METHODS:
        k = sum(s["methods"][method]["agreement_clear_k"] for s in summaries)
        n = sum(s["methods"][method]["agreement_clear_n"] for s in summaries)
        assert table.loc[method, "agreement_clear_text"].endswith(f"({k}/{n})")
        for role in ("A", "B", "C"):  # where a method fails: each model's probes, pooled
            k = sum(s["methods"][method][f"agreement_{role}_k"] for s in summaries)
            n = sum(s["methods"][method][f"agreement_{role}_n"] for s in summaries)
            assert table.loc[method, f"agreement_{role}_text"].endswith(f"({k}/{n})")
    rule_on_c = table.loc["training_rule", "agreement_C_text"]  # it names no cue on C: right on none
    assert re.search(r"\(0/[1-9]\d*\)$", rule_on_c), rule_on_c
    k = sum(s["behaves_as_trained"]["B"]["k"] for s in summaries)
    assert table.loc["model B behaves as trained", "agreement_text"].endswith(f"({k}/{2 * 3})")


def test_swap_sweep_labels_columns_by_the_swept_seed(swept: Path) -> None:
    """``--label data.seed``: the experiments' columns are named by the data seed each ran with."""
    run_ok([str(BIN / "xurs"), "swap-sweep", "--label", "data.seed", "--out", "results/labelled"], swept)
    table = pd.read_csv(swept / "results" / "labelled" / "swap_sweep.csv")
    assert {"data.seed=1", "data.seed=2"} <= set(table.columns)
    assert not {"seed-0", "seed-1"} & set(table.columns)
