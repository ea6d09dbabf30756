"""``bench/bench_certified.py``'s table (docs/certification.md quotes its kept copy): medians per method and
M, App. B.4's verdict, each question whose budget ran out named with the R it reached, and the kept tables
under results/certification/ exactly what the bench makes of their records."""

from __future__ import annotations

import json
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
    assert cells[15] == "none"  # every question's vectors within App. B.4's cosine and distance
    assert cells[16] == "150 (3 q) / 200 (2 q)"
    assert cells[17] == "600, 0.0020"  # the second run (twice the budget): its medians
    assert len(cells) == lines[0].count("|") - 1
    (kronrod,) = [line for line in lines if "| kronrod |" in line]
    assert "first pass above" in kronrod
    assert kronrod.count("|") == lines[0].count("|")
    warped = bench.table([{**_record("q1", 100, 0.004, False), "method": "certified+warp31"}])[2]
    assert warped.split("|")[-3].strip() == "50 (1 q) / 100 (1 q)"  # a warped row reads its trace too
    failing = bench.table([_record("q1", 100, 0.004, False, cosine=0.95)])[2]
    assert "| misses |" in failing  # the median cosine below 0.99: App. B.4 is not met
    assert "| none | q1 (0.9500, 0.020) |" in failing  # no budget ran out; q1's vectors are off
    one_off = [_record("q1", 100, 0.004, False), _record("q2", 100, 0.004, False)]
    one_off.append({**_record("q3", 100, 0.004, False), "distance": 0.6})
    row = bench.table(one_off)[2]
    assert "| holds | none | q3 (0.9990, 0.600) |" in row  # the medians hold, the question is named


def test_a_first_run_alone_is_judged_on_the_residual_only_and_kept_apart(bench) -> None:
    """``--once`` records (no second run, so no vector figures): their own row beside the same cell's paired
    records, App. B.4's residual criteria its verdict, the vector cells empty; a largest R above 0.05
    fails it."""
    once = {"second_run": "none"}
    vectors = ("cosine", "distance", "spearman", "top3", "grad_evals_2x", "residual_2x")
    alone = [
        {k: v for k, v in _record(q, e, r, False).items() if k not in vectors} | once
        for q, e, r in (("q1", 900, 0.004), ("q2", 1500, 0.008))
    ]
    lines = bench.table([*alone, _record("q1", 100, 0.004, False)])
    paired, first = lines[2:]
    assert "| holds |" in paired
    assert "residual only" not in paired
    cells = [c.strip() for c in first.strip("|").split("|")]
    assert len(cells) == lines[0].count("|") - 1
    assert cells[4:9] == ["2", "1200", "5", "0.0060", "0.0080"]
    assert cells[9:13] == ["-"] * 4
    assert cells[13] == "residual only: holds"
    assert cells[17] == "none (first run alone)"
    alone.append({**alone[0], "question": "q3", "residual": 0.06})
    assert "residual only: misses" in bench.table(alone)[2]  # R max 0.06 > App. B.4's 0.05


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


def test_the_second_run_is_twice_the_budget_or_the_stages_own_rerun(bench) -> None:
    """App. B.4's run at twice the budget (certified at half the tolerances), or with ``--rerun`` the
    attribute stage's rerun: the same budget and tolerances, other shifts or another seed (a second run that
    equalled the first could not fail the vector criteria)."""
    from xurs_pipeline.attribution.config import AttributionConfig
    from xurs_pipeline.config import RootConfig

    def config(method: str, **keys):
        return RootConfig(attribution=AttributionConfig(method=method, refs_per_collection=4, **keys))

    certified = config("certified", certified_max_evals=1024)
    twice, rerun = (bench.second_run(certified, 1024, r).attribution for r in (bench.TWICE, bench.RERUN))
    assert (twice.certified_max_evals, twice.certified_tolerance) == (2048, 0.005)
    assert (rerun.certified_max_evals, rerun.certified_tolerance) == (1024, 0.01)
    assert rerun.seed != certified.attribution.seed
    assert not rerun.certified_rerun
    eg = config("eg", n_samples=1024)
    twice, rerun = (bench.second_run(eg, 1024, r).attribution for r in (bench.TWICE, bench.RERUN))
    assert (twice.n_samples, rerun.n_samples) == (2048, 1024)
    assert rerun.seed != eg.attribution.seed
    kronrod = config("kronrod", kronrod_max_evals=1024)
    twice, rerun = (bench.second_run(kronrod, 1024, r).attribution for r in (bench.TWICE, bench.RERUN))
    assert (twice.kronrod_max_evals, rerun.kronrod_max_evals) == (2048, 1024)
    assert rerun.kronrod_intervals == 3 * kronrod.attribution.kronrod_intervals


def test_resume_leaves_out_only_the_questions_of_the_same_cell(bench, tmp_path) -> None:
    """A record counts as done for its own run's content (the attribution fingerprint and the code
    version, beside experiment, model, method, M and budget) and second run only."""
    out = tmp_path / "records.jsonl"
    assert bench.finished(out, {"method": "certified"}, "rerun") == set()  # no file yet
    about = {"experiment": "local", "model": "abc", "method": "certified", "refs": 4, "budget": 512}
    about |= {"run": "fingerprint", "code": "version"}
    rows = [
        {**about, "question": "q1", "second_run": "rerun"},
        {**about, "code": "older", "question": "q4", "second_run": "rerun"},  # other code: runs again
        {**about, "run": "first8", "question": "q5", "second_run": "rerun"},  # another config: runs again
        {**about, "question": "q2", "second_run": "twice"},
        {**about, "question": "q6", "second_run": "none"},  # the first run alone (--once)
        {**about, "refs": 16, "question": "q3", "second_run": "rerun"},
        {**about, "method": "kronrod", "refs": 64, "note": "first pass above"},
    ]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert bench.finished(out, about, "rerun") == {"q1"}
    assert bench.finished(out, about, "twice") == {"q2"}
    assert bench.finished(out, about, "none") == {"q6"}
    assert bench.finished(out, {**about, "refs": 16}, "rerun") == {"q3"}


def test_a_kept_table_names_each_command_its_records_name(bench, tmp_path) -> None:
    """Records made by two commands: the kept table's first line names both, in order, and the command
    given for records that name none is not used; ``command_of`` reads the first back."""
    rows = [
        {**_record("q1", 100, 0.004, False), "command": "python bench/bench_certified.py --refs 4"},
        {
            **_record("q2", 200, 0.004, False),
            "refs": 16,
            "command": "python bench/bench_certified.py --refs 16",
        },
        {**_record("q3", 300, 0.004, False), "command": "python bench/bench_certified.py --refs 4"},
    ]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    kept = bench.kept_table(Path("r.jsonl"), "unused", tmp_path)
    first = kept.splitlines()[0]
    assert first.endswith(
        "records of `python bench/bench_certified.py --refs 4`, then "
        "`python bench/bench_certified.py --refs 16`."
    )
    assert "unused" not in kept
    assert bench.command_of(kept) == "python bench/bench_certified.py --refs 4"
    assert sum(line.startswith("| local | certified |") for line in kept.splitlines()) == 2
    (tmp_path / "old.jsonl").write_text(json.dumps(_record("q1", 100, 0.004, False)) + "\n")
    old = bench.kept_table(Path("old.jsonl"), "python bench/bench_certified.py --old", tmp_path)
    assert bench.command_of(old) == "python bench/bench_certified.py --old"  # records naming none


def test_a_measured_record_holds_both_runs_and_their_vector_figures(bench) -> None:
    """``measure`` on a tiny model (tests/attribution/helpers.py): `certified` at M = 3 and its rerun (other
    shifts, ``rerun_config``) recomputed here through the attribution interface; the record's evaluations,
    residuals and App. B.4 vector figures are those two runs', and each run's wall clock is kept."""
    from dataclasses import replace

    import torch
    from helpers import PAD_ID, TinyBeliefClassifier, prompts_frame

    from xurs_pipeline.attribution.config import AttributionConfig
    from xurs_pipeline.attribution.endpoints import natural_widths
    from xurs_pipeline.attribution.inputs import reference_pool, select_questions
    from xurs_pipeline.attribution.methods import attribute_question
    from xurs_pipeline.attribution.question import ReferencePool
    from xurs_pipeline.config import RootConfig, rerun_config
    from xurs_pipeline.evaluation.agreement import cosine, relative_distance

    model = TinyBeliefClassifier(vocab=40).requires_grad_(False)
    frame = prompts_frame(n_test=1, n_train=3)
    at = AttributionConfig(progress=False, method="certified", refs_per_collection=3, certified_max_evals=64)
    cfg = RootConfig(attribution=at)
    pool = ReferencePool(*reference_pool(frame, at, 64))
    pool.natural = [natural_widths(model, ids, 4, torch.device("cpu")) for ids in pool.token_ids]
    (q,) = select_questions(frame, at, 64)
    record = bench.measure(model, q, pool, cfg, PAD_ID, budget=64, second="rerun")
    again = rerun_config(replace(cfg, attribution=replace(at, certified_rerun=True))).attribution
    (first,) = attribute_question(model, q, pool, at, PAD_ID).rows
    (second,) = attribute_question(model, q, pool, again, PAD_ID).rows
    assert again.seed != at.seed  # other shifts: two estimates, not one run twice
    assert (record["grad_evals"], record["grad_evals_2x"]) == (first.grad_evals, second.grad_evals)
    assert record["residual"] == pytest.approx(float(first.residual), rel=1e-12)
    assert record["residual_2x"] == pytest.approx(float(second.residual), rel=1e-12)
    e, e2 = first.coords["e"].numpy(), second.coords["e"].numpy()
    assert record["cosine"] == pytest.approx(cosine(e, e2), rel=1e-12)
    assert record["distance"] == pytest.approx(relative_distance(e, e2), rel=1e-12)
    assert record["distance"] > 0
    assert record["seconds"] > 0
    assert record["seconds_2x"] > 0
    assert record["second_run"] == "rerun"
    alone = bench.measure(model, q, pool, cfg, PAD_ID, budget=64, second="none")
    assert (alone["grad_evals"], alone["residual"]) == (record["grad_evals"], record["residual"])
    assert "cosine" not in alone
    assert "grad_evals_2x" not in alone


@pytest.mark.parametrize("name", ["bench_certified", "kronrod_references"])
@pytest.mark.parametrize(("skip", "questions"), [(2, 1), (3, 3), (-1, 4)])
def test_a_skip_that_leaves_no_question_is_refused_before_the_model_loads(
    name: str, monkeypatch, capsys, skip: int, questions: int
) -> None:
    def never(*_args, **_kwargs):
        raise AssertionError("the bench loaded a model for a run that measures nothing")

    bench = load_bench_script(name)
    monkeypatch.setattr(bench, "run", never)
    argv = [f"{name}.py", "--questions", str(questions), "--skip", str(skip), "--out", "unused.jsonl"]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert f"--skip {skip} is not from 0 to --questions - 1 ({questions - 1})" in error
    assert "--questions 3 --skip 2" in error


@pytest.mark.parametrize("name", ["bench_certified", "kronrod_references"])
def test_no_question_to_measure_is_refused(name: str, monkeypatch, capsys) -> None:
    bench = load_bench_script(name)
    monkeypatch.setattr(bench, "run", lambda *_: pytest.fail("the bench ran with no question to measure"))
    monkeypatch.setattr("sys.argv", [f"{name}.py", "--questions", "0", "--out", "unused.jsonl"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--questions 0: at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["bench_certified", "kronrod_references"])
def test_a_skip_within_the_questions_runs(name: str, monkeypatch) -> None:
    bench = load_bench_script(name)
    ran = []
    monkeypatch.setattr(bench, "run", ran.append)
    argv = [f"{name}.py", "--questions", "3", "--skip", "2", "--out", "x.jsonl"]
    monkeypatch.setattr("sys.argv", argv)
    bench.main()
    assert [(args.questions, args.skip) for args in ran] == [(3, 2)]
