"""Every attribution method through the whole pipeline: the smoke experiment with ``attribution.method`` set
to each name of ``attribution.config.METHODS`` runs in one process to the report (the tasks ``dvc repro``
runs), its rows carry the method and the cost the method has, a residual only where it has one, and its
question pages name it. The smoke project is trained once (the stages no ``attribution`` key reaches); each
method reruns only the stages that read one, or read what those write. With ``evaluation.compare_methods``
the ``attribute_compare`` stage explains the same questions with further methods: its agreement figures
are checked against an independent computation, its zero-masking of the main method's ranking against
``mask_eval``'s Table 1, and every question page shows the first beside the main method."""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from params_reads import Reads, recording, unlisted_reads
from smoke_project import BIN, run_ok
from user_clone import git_clone

from xurs_pipeline.attribution.config import METHODS
from xurs_pipeline.config import RootConfig, compose, load_params
from xurs_pipeline.contracts import ALL, ARTIFACTS, STAGES, artifact, compare_dir
from xurs_pipeline.io import read_json
from xurs_pipeline.reporting.html_explanation import TOP_TOKENS
from xurs_pipeline.reporting.html_index import page_name
from xurs_pipeline.reporting.html_view import GREYED_SECTIONS, HIDDEN_SECTIONS
from xurs_pipeline.tasks.runner import run_task, stage_task

REPO = Path(__file__).resolve().parents[2]
# Per method, its own budget kept small where it grows with the prompt (shapley_span: 2^spans forwards,
# sequential_ig: L x steps gradients; IG: references x points): the counts are checked against these keys.
OWN_KEYS = {
    "ig": ["attribution.ig_points=4"],
    "sequential_ig": ["attribution.sequential_ig_steps=1"],
    "occlusion_span": ["attribution.span_tokens=32"],
    "shapley_span": ["attribution.span_tokens=64"],
}
# the methods with a completeness residual; the adaptive ones with their budget key
RESIDUAL = ("eg", "ig", "kronrod", "certified", "layer_ig", "sequential_ig")
ADAPTIVE = {"kronrod": "kronrod_max_evals", "certified": "certified_max_evals"}
pytestmark = pytest.mark.slow
# Per method, the parts of the smoke experiment that do the same for every method (repeats, comparison
# targets, the randomisation check) are left out and two questions explained: every stage still runs.
LEAN = [
    "attribution.max_questions=2",
    "evaluation.repeat_seeds=[]",
    "evaluation.targets=[width]",
    "evaluation.randomisation_questions=0",
]


def attribution_stages() -> list[str]:
    """The stages that read an ``attribution`` key (or the whole config), and every stage reading what one of
    those writes, in ``STAGES`` order: what a change of method reruns (``check`` validates the config again;
    its stamp never changes, so the stages after it do not follow)."""
    rerun: set[str] = set()
    for name, stage in STAGES.items():  # in order: a writer comes before its readers
        keys = any(p == ALL or p.startswith("attribution.") for p in stage.params)
        if keys or any(ARTIFACTS[a].writer in rerun - {"check"} for a in stage.reads):
            rerun.add(name)
    return [name for name in STAGES if name in rerun]


def _configure(root: Path, overrides: list[str]) -> RootConfig:
    params = compose(["experiment=smoke", *overrides], REPO / "conf")
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return load_params(root / "params.yaml")


def _run(cfg: RootConfig, stages: list[str]) -> None:
    """Run ``stages`` in order, checking each lists every key it reads (tests/params_reads.py)."""
    reads: Reads = {}
    for name in stages:
        run_task(name, stage_task(name), recording(cfg, reads))
    assert unlisted_reads(reads, asdict(cfg)) == {}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke project with every stage no attribution key reaches run once (backbone to predict)."""
    root = tmp_path_factory.mktemp("methods") / "trained"
    root.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        _run(_configure(root, []), [s for s in STAGES if s not in attribution_stages()])
    return root


def _project(
    trained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overrides: list[str]
) -> RootConfig:
    """A copy of the trained project with ``overrides``, the attribution stages run in it (it is the cwd)."""
    root = tmp_path / "project"
    shutil.copytree(trained, root)
    monkeypatch.chdir(root)
    cfg = _configure(root, overrides)
    _run(cfg, attribution_stages())
    return cfg


def test_a_method_change_reruns_the_attribution_stages_and_nothing_trained() -> None:
    rerun = attribution_stages()
    assert {"attribute", "mask_eval", "checks", "attribute_compare", "tables", "report"} <= set(rerun)
    assert not {"backbone", "prepare", "train_head", "train", "predict", "train_swap"} & set(rerun)


def _expected_grad_evals(cfg: RootConfig, length: int) -> int | None:
    """A question's gradient evaluations for the method, by hand (None: kronrod and certified, adaptive,
    checked against their budgets apart)."""
    a = cfg.attribution
    refs = a.n_collections * a.refs_per_collection
    return {
        "eg": a.n_samples * a.n_collections,
        "ig": refs * a.ig_points,
        "grad_l2": 1,
        "grad_x_input": 1,
        "layer_ig": a.layer_ig_steps,
        "sequential_ig": length * a.sequential_ig_steps,
    }.get(a.method, None if a.method in ADAPTIVE else 0)


def _expected_forwards(cfg: RootConfig, length: int) -> int | None:
    """A token method's forwards: the input's own, F(X) and one per variant (None: not a closed form)."""
    method, spans = cfg.attribution.method, math.ceil(length / cfg.attribution.span_tokens)
    return {"occlusion_token": length + 2, "occlusion_span": spans + 2, "shapley_span": 2**spans + 1}.get(
        method
    )


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_the_smoke_experiment_to_the_report(
    trained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    own = OWN_KEYS.get(method, [])
    cfg = _project(trained, tmp_path, monkeypatch, [f"attribution.method={method}", *own, *LEAN])
    rows = pd.read_parquet(artifact("attributions").at(cfg.paths))
    assert len(rows)
    assert set(rows["method"]) == {method}
    lengths = rows["token_magnitude"].map(len)
    assert (
        (rows["grad_evals"] > 0) == (method not in ("occlusion_token", "occlusion_span", "shapley_span"))
    ).all()
    for row, length in zip(rows.itertuples(index=False), lengths, strict=True):
        grads, forwards = _expected_grad_evals(cfg, length), _expected_forwards(cfg, length)
        assert grads is None or row.grad_evals == grads, (row.record_id, row.grad_evals, grads)
        assert forwards is None or row.forward_evals == forwards, (row.record_id, row.forward_evals, forwards)
    if method in ADAPTIVE:
        assert (rows["grad_evals"] <= getattr(cfg.attribution, ADAPTIVE[method])).all()
    assert rows["residual"].notna().all() == (method in RESIDUAL)
    assert rows["residual"].isna().all() == (method not in RESIDUAL)
    assert read_json(artifact("mask_metrics").at(cfg.paths))["budget"]["method"] == [
        method
    ]  # Table 1's ranking
    html = artifact("html").at(cfg.paths)
    for record_id in rows["record_id"].unique():
        page = (html / page_name(str(record_id))).read_text()
        assert method.upper() in page  # the run's method, named in the page's provenance
        assert ("Completeness residual R (Eq. 9)" in page) == (method in RESIDUAL)
    assert "Two methods on this question" not in page


def _page_top(magnitude: np.ndarray, sections: list[str]) -> set[int]:
    """The page's top-k positions, computed here: drawn positions by magnitude, earlier first on ties."""
    drawn = [i for i, s in enumerate(sections) if s not in GREYED_SECTIONS + HIDDEN_SECTIONS]
    return set(sorted(drawn, key=lambda i: (-magnitude[i], i))[:TOP_TOKENS])


def _agreement_by_hand(a: np.ndarray, b: np.ndarray, eligible: np.ndarray) -> tuple[float, int]:
    """Spearman's rho as Pearson's r of average ranks (pandas), and the top-5 overlap by sorting, over the
    eligible positions."""
    where = np.flatnonzero(eligible)
    ranks = [pd.Series(m[where]).rank().to_numpy() for m in (a, b)]
    rho = float(np.corrcoef(*ranks)[0, 1]) if min(r.std() for r in ranks) > 0 else float("nan")
    tops = [set(sorted(where, key=lambda i, m=m: (-m[i], i))[:5]) for m in (a, b)]
    return rho, len(tops[0] & tops[1])


def test_compare_methods_agree_as_computed_by_hand_and_mask_as_table_1(
    trained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    others = ["occlusion_token", "grad_l2"]
    compared = f"evaluation.compare_methods=[{','.join(others)}]"
    cfg = _project(trained, tmp_path, monkeypatch, [compared, *LEAN])
    main = cfg.attribution.method
    runs = {main: pd.read_parquet(artifact("attributions").at(cfg.paths))}
    runs |= {m: pd.read_parquet(compare_dir(cfg.paths, m) / "attributions.parquet") for m in others}
    keys = ["record_id", "target"]
    for method, rows in runs.items():  # the same answers, each method its own cost
        assert set(rows["method"]) == {method}
        assert sorted(map(tuple, rows[keys].values.tolist())) == sorted(
            map(tuple, runs[main][keys].values.tolist())
        )
    prompts = pd.read_parquet(artifact("prompts").at(cfg.paths)).set_index("record_id")
    agreement = pd.read_parquet(artifact("method_agreement").at(cfg.paths))
    pairs = [(main, "occlusion_token"), (main, "grad_l2"), ("occlusion_token", "grad_l2")]
    assert len(agreement) == len(pairs) * len(runs[main])
    indexed = {m: r.set_index(keys)["token_magnitude"] for m, r in runs.items()}
    for row in agreement.itertuples(index=False):
        assert (row.method_a, row.method_b) in pairs
        a, b = (np.asarray(indexed[m][(row.record_id, row.target)]) for m in (row.method_a, row.method_b))
        rho, overlap = _agreement_by_hand(
            a, b, np.asarray(prompts.loc[row.record_id, "eligible"], dtype=bool)
        )
        assert row.top_overlap == overlap
        assert (math.isnan(rho) and math.isnan(row.spearman)) or row.spearman == pytest.approx(rho, abs=1e-12)
    metrics = read_json(artifact("method_metrics").at(cfg.paths))
    assert metrics["methods"] == [main, *others]
    for a, b in pairs:
        mine = agreement[(agreement.method_a == a) & (agreement.method_b == b)]
        summary = metrics["pairs"][f"{a} vs {b}"]
        assert summary["top_overlap_median"] == mine["top_overlap"].median()
        assert summary["spearman_median"] == pytest.approx(np.nanmedian(mine["spearman"]), abs=1e-12)
    costs = metrics["costs"]
    assert costs["grad_l2"]["grad_evals_median"] == 1
    assert costs["occlusion_token"]["grad_evals_median"] == 0
    assert costs[main]["grad_evals_median"] == cfg.attribution.n_samples * cfg.attribution.n_collections
    assert all(c["seconds_per_question"] > 0 for c in costs.values())
    # the main method's ranking zero-masked as mask_eval's Table 1 (same protocol, questions, draws), to the
    # float32 model's rounding of widths near 1 (other top sets share its batches here)
    table1 = read_json(artifact("mask_metrics").at(cfg.paths))["targets"]["width"]
    mine = metrics["zero_masking"][main]
    assert mine["questions"] == table1["questions"]
    for key in ("mean_advantage", "ci_low", "ci_high"):
        assert mine[key] == pytest.approx(table1[key], abs=1e-6), key
    assert set(metrics["zero_masking"]) == {main, *others}
    _check_pages(cfg, runs[main], runs["occlusion_token"], "occlusion_token")


def _check_pages(cfg: RootConfig, rows: pd.DataFrame, other: pd.DataFrame, compare: str) -> None:
    """Each question page shows the first compare method beside the main one, with the count of tokens both
    rank in their top k computed from the two tables."""
    html = artifact("html").at(cfg.paths)
    sections = pd.read_parquet(artifact("prompts").at(cfg.paths)).set_index("record_id")["sections"]
    other = other.set_index(["record_id", "target"])
    for row in rows.itertuples(index=False):
        mine = np.asarray(row.token_magnitude)
        theirs = np.asarray(other.loc[(row.record_id, row.target), "token_magnitude"])
        assert not np.allclose(mine, theirs)  # two methods, not one twice
        agree = len(
            _page_top(mine, list(sections[row.record_id])) & _page_top(theirs, list(sections[row.record_id]))
        )
        page = (html / page_name(row.record_id)).read_text()
        assert "Two methods on this question" in page
        assert re.search(rf'data-agree="{agree}"', page), (row.record_id, agree)
        assert f"<strong>{compare}</strong>" in page


@pytest.mark.second_job  # a whole `dvc repro` of the smoke experiment (CI's second job: pyproject.toml)
def test_a_fresh_clone_reproduces_the_smoke_experiment_with_a_token_method(tmp_path: Path) -> None:
    """The user's path, from a fresh clone: ``xurs params experiment=smoke attribution.method=grad_x_input &&
    dvc repro`` runs every stage to the report, and DVC then finds nothing to rerun."""
    work = git_clone(tmp_path / "xurs")
    run_ok([str(BIN / "xurs"), "params", "experiment=smoke", "attribution.method=grad_x_input"], work)
    run_ok([str(BIN / "dvc"), "repro"], work)
    rows = pd.read_parquet(work / "data" / ARTIFACTS["attributions"].path)
    assert set(rows["method"]) == {"grad_x_input"}
    assert (rows["grad_evals"] == 1).all()
    assert rows["residual"].isna().all()
    page = work / "results" / ARTIFACTS["html"].path / page_name(str(rows["record_id"].iloc[0]))
    assert "GRAD_X_INPUT" in page.read_text()
    assert "Data and pipelines are up to date" in run_ok([str(BIN / "dvc"), "status"], work).stdout
