"""``bench/kronrod_references.py`` (BENCHMARKS.md section 19): both stopping rules read from a run's trace,
the medians with runs that ended above their budget, per refinement lead, and the projection over reference
counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bench_scripts import load_bench_script

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.methods import method_for
from xurs_pipeline.attribution.quadrature import KronrodSpec, integrate


@pytest.fixture(scope="module")
def bench():
    return load_bench_script("kronrod_references")


def test_first_step_of_each_rule_matches_a_run_stopped_by_it(bench) -> None:
    """The evaluations the bench reads off a run's trace for its own rule are the run's end; a ``bound``
    run's trace also says where its (bound-led) order first met the ``residual`` rule, no earlier than a
    residual-led run meets it on these steps (each reference's step is bisected where the residual is)."""
    centres = (0.3, 0.7, 0.52, 0.9)
    slope = lambda r, a: 300 * np.exp(-300 * (a - centres[r])) / (1 + np.exp(-300 * (a - centres[r]))) ** 2  # noqa: E731
    gap = np.array([[1 / (1 + np.exp(-300 * (1 - c))) - 1 / (1 + np.exp(300 * c))] for c in centres])

    def evaluate(ref, nodes, weights):
        g = np.array([slope(ref, a) for a in nodes])
        return g[:, None], None

    full = integrate(evaluate, gap, KronrodSpec(bench.TOLERANCE, max_evals=20_000))
    early = integrate(evaluate, gap, KronrodSpec(bench.TOLERANCE, max_evals=20_000, stop="residual"))
    assert bench.first_step(early.trace, "residual")["evals"] == early.evals
    assert early.evals <= bench.first_step(full.trace, "residual")["evals"] < full.evals
    assert bench.first_step(full.trace, "bound")["evals"] == full.evals
    assert bench.first_step(full.trace[:1], "bound") == {"evals": None, "seconds": None}  # never held


def _record(question: str, refs: int, residual: float | None, bound: float | None) -> dict:
    rule = lambda e: {"evals": e, "seconds": None if e is None else e / 10}  # noqa: E731
    return {
        "question": question,
        "tokens": 150,
        "refs": refs,
        "budget": 150 * refs,
        "stop": "bound",
        "exhausted": bound is None,
        "residual_rule": rule(residual),
        "bound_rule": rule(bound),
        "final": {"evals": 150 * refs, "R": 0.001, "bound": 0.02, "seconds": 15.0 * refs},
        "eg": {"draws": 64, "R": 0.05, "s": 1.0, "draws_for_0.01": 38415.0},
        "masking_seconds": 1.0,
    }


def test_median_counts_runs_above_the_budget_as_larger(bench) -> None:
    assert bench._median([100, 200, None]) == 200  # the missing one is above the budget: median 200
    assert bench._median([100, None, None]) is None  # most ran out: no median
    assert bench._median([100, 300]) == 200


def test_table_projects_per_reference_cost_and_labels_it(bench, tmp_path, capsys) -> None:
    out = tmp_path / "r.jsonl"
    rows = [_record("q1", 4, 240, None), _record("q2", 4, 360, 600), _record("q3", 4, 300, 540)]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = type("Args", (), {"out": str(out), "project": [256]})
    bench.table(args)
    text = capsys.readouterr().out
    # the bound rule: 540, 600 and one above the budget; the projection: 75 a reference (60, 90, 75) x 256
    assert "| 4 | kronrod, bound-led | 3 | measured | 300 | 600 (3 runs) |" in text
    assert "| 256 | kronrod, bound-led | - | projected | 19,200 |" in text
    assert "> 600" in text  # q1's bound rule: above its budget
    stopped = {**_record("q4", 16, 900, None), "stop": "residual", "exhausted": False}
    assert bench._evals(stopped, "bound_rule") == "-"  # not run past the residual rule: unknown, not > budget
    assert bench._evals(stopped, "residual_rule") == "900"
    out.write_text("".join(json.dumps(r) + "\n" for r in [rows[0], stopped, {**stopped, "refs": 4}]))
    bench.table(args)
    text = capsys.readouterr().out
    # one bound run (above its budget): its median is unknown, not the stopped runs' "-" counted as above it
    assert "| 4 | kronrod, bound-led | 2 | measured | 570 | above the budget (1 run) |" in text
    assert "| 16 | kronrod, bound-led | 1 | measured | 900 | - |" in text
    residual_led = {**stopped, "refs": 4, "lead": "residual", "residual_rule": {"evals": 200, "seconds": 20}}
    out.write_text("".join(json.dumps(r) + "\n" for r in [rows[0], stopped, residual_led]))
    bench.table(args)
    text = capsys.readouterr().out  # each lead its own medians and projection
    assert "| 4 | kronrod, residual-led | 1 | measured | 200 | - |" in text
    assert "| 256 | kronrod, residual-led | - | projected | 12,800 |" in text
    assert "| 4 | kronrod, bound-led | 1 | measured | 240 |" in text


def test_a_record_is_reused_only_for_the_same_model_and_settings(bench) -> None:
    record = {**_record("q1", 4, 240, None), "model": "abc"}
    assert bench._key(record) == ("kronrod", "q1", 4, 600, "bound", "bound", "abc")  # no lead: bound-led
    for change in (
        {"estimator": "ig_adaptive"},
        {"budget": 1200},
        {"stop": "residual"},
        {"model": "other"},
        {"refs": 16},
        {"lead": "residual"},
    ):
        assert bench._key({**record, **change}) != bench._key(record)


def test_each_lead_is_its_runs_config_key(bench) -> None:
    """``--lead`` sets each kronrod run's ``attribution.kronrod_lead`` (the library's key, nothing patched),
    which reaches the estimator; the stop, budget and references are the run's either way."""
    args = type("Args", (), {"stop": "residual", "per_ref_budget": 300, "ig_max_points": 256})
    for lead in ("bound", "residual"):
        cfg = bench._config(AttributionConfig(), 4, "kronrod", args, lead)
        assert (cfg.method, cfg.kronrod_stop, cfg.kronrod_lead) == ("kronrod", "residual", lead)
        assert (cfg.kronrod_max_evals, cfg.refs_per_collection, cfg.n_collections) == (1200, 4, 1)
        assert method_for(cfg).settings.estimator(0).spec.lead_rule == lead
    assert not hasattr(bench, "mock")


def test_adaptive_ig_runs_after_kronrod_and_has_its_own_row(bench, tmp_path, capsys) -> None:
    """``--estimators kronrod ig_adaptive`` measures each question under kronrod's leads, then adaptive IG;
    an IG run that ended with a reference above 0.01 at its last level counts as above its whole schedule."""
    args = type(
        "Args",
        (),
        {
            "lead": ["bound", "residual"],
            "estimators": ["kronrod", "ig_adaptive"],
            "ig_max_points": 256,
            "per_ref_budget": 300,
            "stop": "residual",
        },
    )
    assert bench._runs(args) == [("kronrod", "bound"), ("kronrod", "residual"), ("ig_adaptive", "residual")]
    args.estimators = ["ig_adaptive"]
    assert bench._runs(args) == [("ig_adaptive", "residual")]
    at = AttributionConfig(ig_points=64, ig_refine_factor=4)
    assert bench._budget(at, 4, "ig_adaptive", args) == 4 * (64 + 256)  # every level recomputed
    assert bench._budget(at, 4, "kronrod", args) == 1200

    def ig(q: str, e: int | None) -> dict:
        return {
            **_record(q, 4, e, None),
            "estimator": "ig_adaptive",
            "stop": "residual",
            "lead": "residual",
            "exhausted": e is None,
            "budget": 1280,
        }

    out = tmp_path / "r.jsonl"
    rows = [ig("q1", 320), ig("q2", None), ig("q3", 1280), _record("q1", 4, 240, 600)]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench.table(type("Args", (), {"out": str(out), "project": [16]}))
    text = capsys.readouterr().out
    assert "| q2 | 150 | 4 | adaptive IG | > 1,280 | - |" in text
    assert "| 4 | adaptive IG | 3 | measured | 1,280 | - |" in text  # 320, 1,280 and one above: median 1,280
    assert "| 16 | adaptive IG | - | projected | 5,120 |" in text  # per reference 80, 320 and one above: 320
    assert "| 4 | kronrod, bound-led | 1 | measured | 240 |" in text


def test_planning_table_labels_each_cell_measured_or_projected(bench) -> None:
    """Estimator x reference count: medians where run (runs above the budget counted as larger), the median
    per reference x M elsewhere; EG from one run per question (its records repeat under each estimator)."""
    ig = {
        **_record("q1", 4, None, None),
        "estimator": "ig_adaptive",
        "stop": "residual",
        "lead": "residual",
        "exhausted": True,
        "budget": 1280,
    }
    eg_q2 = {"draws": 64, "R": 0.05, "s": 0.5, "draws_for_0.01": 10_000.0}
    rows = [
        _record("q1", 4, 240, None),
        {**_record("q2", 4, 400, None), "eg": eg_q2},
        _record("q3", 16, 1600, None),
        ig,
        {**ig, "question": "q2", "eg": eg_q2},
        {**ig, "question": "q3", "refs": 16, "residual_rule": {"evals": 2560, "seconds": 1}},
    ]
    text = bench.planning_table(rows, [4, 16, 64])
    # kronrod per reference: 60, 100, 100 -> 100; 16 measured (one question), 64 projected
    assert "| kronrod, bound-led | 320 (measured, 2 q) | 1,600 (measured, 1 q) | 6,400 (projected) |" in text
    # adaptive IG: two of three above the budget, so neither a median at 4 nor a projection
    above = "above the budget"
    assert f"| adaptive IG | {above} (measured, 2 q) | 2,560 (measured, 1 q) | {above} (projected) |" in text
    # EG: q1 and q2 at 4 (38,415 and 10,000: median 24,208), q3 at 16; 64 takes s at the nearest M run (16)
    eg = "projected from s"
    assert f"| EG (the paper's) | 24,208 ({eg}, 2 q) | 38,415 ({eg}, 1 q) | 38,415 ({eg} at M = 16) |" in text


def test_a_question_counts_once_per_estimator_and_lead(bench) -> None:
    """A remeasured pair (another budget, stopping rule or run) replaces the earlier record in the tables;
    another lead, estimator or M is another record."""
    first = {**_record("q1", 4, 540, None), "model": "m"}
    again = {**first, "stop": "residual", "budget": 1200, "model": None}  # a record from before the hash
    others = [{**first, "lead": "residual"}, {**first, "estimator": "ig_adaptive"}, {**first, "refs": 16}]
    assert bench.latest([first, again, *others]) == [again, *others]


def test_no_eg_draws_is_refused_before_any_model_loads() -> None:
    """Every record projects EG's draws, so ``--eg-samples 0`` is one line naming the flag (it used to fail
    inside the config after the model had loaded)."""
    script = Path(__file__).resolve().parents[2] / "bench" / "kronrod_references.py"
    refused = subprocess.run(
        [sys.executable, str(script), "--eg-samples", "0"], capture_output=True, text=True, check=False
    )
    assert refused.returncode == 2
    assert "--eg-samples=0: must be >= 1" in refused.stderr
    assert "Traceback" not in refused.stderr
