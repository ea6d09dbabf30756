"""``bench/bench_certified.py``'s table (docs/certification.md quotes its kept copy): medians per method and
M, App. B.4's verdict, each question whose budget ran out named with the R it reached, and the kept tables
under results/certification/ exactly what the bench makes of their records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bench_scripts import load_bench_script

ROOT = Path(__file__).resolve().parents[2]
KEPT = sorted((ROOT / "results" / "certification").glob("cost_curve*.md"))


@pytest.fixture(scope="module")
def bench():
    return load_bench_script("bench_certified")


def _record(question: str, evals: int, residual: float, exhausted: bool, cosine: float = 0.999) -> dict:
    return {
        "experiment": "local",
        "method": "certified",
        "question": question,
        "refs": 4,
        "budget": 512,
        "grad_evals": evals,
        "forwards": 5,
        "residual": residual,
        "budget_exhausted": exhausted,
        "cosine": cosine,
        "distance": 0.02,
        "spearman": 0.99,
        "top3": 1.0,
        "evals_residual_only": evals / 2,
        "evals_rule": None if exhausted else evals,
        "grad_evals_2x": 2 * evals,
        "residual_2x": residual / 2,
    }


def test_the_table_gives_medians_the_verdict_and_names_each_exhausted_question_with_its_r(bench) -> None:
    rows = [_record("q1", 100, 0.004, False), _record("q2", 300, 0.002, False)]
    rows.append(_record("q3", 512, 0.03, True))
    note = {"experiment": "local", "method": "kronrod", "refs": 64, "budget": 512, "note": "first pass above"}
    lines = bench.table([*rows, note])
    assert lines[0] == bench.HEADER
    assert lines[1].count("|") == lines[0].count("|")
    (certified,) = [line for line in lines if "| certified |" in line]
    cells = [c.strip() for c in certified.strip("|").split("|")]
    # questions, median evaluations, median forwards, median R, max R
    assert cells[4:9] == ["3", "300", "5", "0.0040", "0.0300"]
    assert cells[13] == "holds"
    assert cells[14] == "q3 (0.030)"  # ran out, with the R it reached
    assert cells[15] == "150 (3 q) / 200 (2 q)"
    assert cells[16] == "600, 0.0020"  # the second run (twice the budget): its medians
    assert len(cells) == lines[0].count("|") - 1
    (kronrod,) = [line for line in lines if "| kronrod |" in line]
    assert "first pass above" in kronrod
    assert kronrod.count("|") == lines[0].count("|")
    warped = bench.table([{**_record("q1", 100, 0.004, False), "method": "certified+warp31"}])[2]
    assert warped.split("|")[-3].strip() == "50 (1 q) / 100 (1 q)"  # a warped row reads its trace too
    failing = bench.table([_record("q1", 100, 0.004, False, cosine=0.95)])[2]
    assert "| misses |" in failing  # the median cosine below 0.99: App. B.4 is not met
    assert "| none |" in failing


def test_which_references_hold_the_error(bench) -> None:
    """One reference of eight holding all of it, against eight sharing it evenly."""
    alone = bench.where_references_err([0.0] * 7 + [0.5], [2] * 7 + [64])
    assert alone == {
        "rho2_top_share": 1.0,
        "rho2_top_eighth_share": 1.0,
        "points_median": 2.0,
        "points_max": 64,
    }
    even = bench.where_references_err([0.1] * 8, [4] * 8)
    assert even["rho2_top_share"] == pytest.approx(1 / 8)


@pytest.mark.parametrize("kept", KEPT, ids=[k.name for k in KEPT])
def test_each_kept_table_is_the_bench_table_of_its_records(bench, kept: Path) -> None:
    """A kept table is what ``--table --kept`` writes from the records its first line names, with the
    command that made them: a figure typed or edited by hand in it fails here."""
    text = kept.read_text()
    records = re.search(r"--out (\S+) --table", text.splitlines()[0])
    assert records, f"{kept}: its first line names no records file"
    assert re.match(r"([A-Z_]+=\S+ )*(nice -n 10 )?python bench/bench_certified.py ", bench.command_of(text))
    assert text == bench.kept_table(Path(records.group(1)), bench.command_of(text), ROOT)


def test_a_budget_below_kronrods_first_pass_is_a_record_not_a_crash(bench, monkeypatch, tmp_path) -> None:
    """M = 64 at 512: K15's first pass (960) is above the budget, so the record says so and nothing runs;
    the trapezoid's (128) is not, so the bench goes on to explain (stopped here at the question list)."""
    from argparse import Namespace

    from xurs_pipeline.attribution.config import AttributionConfig
    from xurs_pipeline.config import RootConfig

    def stop(*_args):
        raise RuntimeError("explaining")

    args = Namespace(experiment="local", override=[], out=str(tmp_path / "r.jsonl"), refs=[64], budgets=[512])
    args.methods, args.kronrod_bound, args.questions, args.skip = ["kronrod"], 0.0, 1, 0
    monkeypatch.setattr(bench, "explained_questions", stop)
    for rule, note in (("k15", "first pass of 960 evaluations above the budget 512"), ("trapezoid", None)):
        cfg = RootConfig(attribution=AttributionConfig(kronrod_rule=rule))
        monkeypatch.setattr(bench, "load", lambda *_a, cfg=cfg: (None, None, cfg, 0))
        if note is None:
            with pytest.raises(RuntimeError, match="explaining"):
                bench.run(args)
        else:
            bench.run(args)
            assert bench.read_records(Path(args.out))[-1]["note"] == note


def test_the_label_names_the_interval_rule_and_a_bound_stop(bench) -> None:
    from xurs_pipeline.attribution.config import AttributionConfig

    assert bench.label(AttributionConfig(method="kronrod", kronrod_stop="residual")) == "kronrod"
    trapezoid = AttributionConfig(method="kronrod", kronrod_rule="trapezoid", kronrod_tolerance=0.03)
    assert bench.label(trapezoid) == "kronrod+trapezoid@bound0.03"
