"""App. B.4 at M training references within a budget: `certified` beside residual-led `kronrod` and EG.

    nice -n 10 python bench/bench_certified.py --experiment local --override KEY=VALUE ... \
        [--questions 4] [--skip 0] [--refs 16 64 256] [--budgets 512 1024 2048] \
        [--methods certified kronrod eg] [--out results/bench/certified.jsonl] [--rerun | --once] [--resume] \
        [--table]

For each of the first ``--questions`` questions the ``attribute`` stage explains (against training
references) and each M in ``--refs`` with the budget at the same place in ``--budgets``, each method runs
twice through the stage's own ``attribute_question``: at the budget, and as App. B.4's second run at twice
the budget (``config.repeat_config``: `certified` with other shifts and half the tolerances, `kronrod` from
three times the intervals, EG with another seed), or with ``--rerun`` as the ``attribute`` stage's own rerun
at the same budget and tolerances (``config.rerun_config``: `certified` with other shifts, `kronrod` from
three times the intervals, EG with another seed; ``dvc metrics show``'s vector figures), so the vector
criteria compare the two as the ``checks`` stage does (``evaluation.agreement``: cosine, relative Euclidean
distance, Spearman of the token magnitudes, top-3 overlap). With ``--once`` the first run alone, for cells
whose second run the time does not allow: its evaluations and App. B.4's residual criteria, no vector
figures (the table says "residual only"). `kronrod` runs residual-led
(``kronrod_stop=residual``, App. B.4's per-reference rule at 0.01), or with ``--kronrod-bound TOL`` by its
bound rule at TOL; ``--override attribution.kronrod_rule=trapezoid`` runs it on the trapezoid rule
(``attribution/trapezoid.py``; the table names it ``kronrod+trapezoid``); where its first pass is above the
budget it cannot run, and the record says so. From `certified`'s trace: the evaluations at which the exact
averaged residual alone first held, and at which its whole rule held. Each (method, question, M) is one JSON
line appended to ``--out`` as it ends (``seconds`` the run's wall clock, ``seconds_2x`` its second run's),
with the load average and the command that made it; ``--resume`` leaves out each question ``--out`` already
holds from the same run's content (the attribution fingerprint, which holds the classifier's run, and the
pipeline's code version) and second run, so a stopped run goes on where it stopped and a changed config or
code runs again; ``--table`` prints the records as a table (medians per method and M, App. B.4's verdict, each
question whose budget ran out named with the R it reached, the second run's evaluations and R), and ``--kept
FILE`` also writes it to FILE headed by the commands that made the records (results/certification/;
``--command CMD`` for records that do not name theirs). Each `certified` record says which references hold the
error (``where_references_err``).
Needs the trained model of ``--experiment`` (`dvc repro train`, or its ``paths.artifacts`` override).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trained import add_skip, check_skip, experiment_parser, explained_questions, load, method_config

from xurs_pipeline.attribution.certified import TRACE_COLUMNS, CertifiedSpec
from xurs_pipeline.attribution.config import kronrod_first_pass
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.config import attribution_fingerprint, repeat_config, rerun_config, train_run_hash
from xurs_pipeline.evaluation.agreement import cosine, relative_distance, spearman, topk_overlap
from xurs_pipeline.fingerprint import code_version

REPEAT_SEED = 1_000_003
# a record's ``second_run``: App. B.4's run at twice the budget, the stage's rerun (``--rerun``), or none,
# the first run alone (``--once``)
TWICE, RERUN, ONCE = "twice", "rerun", "none"
CRITERIA = {
    "residual_median": 0.01,
    "residual_max": 0.05,
    "cosine": 0.99,
    "distance": 0.10,
    "spearman": 0.95,
    "top3": 0.8,
}


def second_run(cfg, budget: int, second: str = TWICE):
    """App. B.4's second run: at twice the budget (``TWICE``: the ``attribute_repeats`` config, kronrod's and
    EG's budget doubled too), or the ``attribute`` stage's own rerun at the same budget and tolerances
    (``RERUN``: ``rerun_config`` for `certified`; the repeat config, undoubled, for the others)."""
    rerun = second == RERUN
    at = cfg.attribution
    if rerun and at.method == "certified":
        return rerun_config(replace(cfg, attribution=replace(at, certified_rerun=True)))
    again = repeat_config(cfg, REPEAT_SEED)
    if rerun:
        return again
    if again.attribution.method == "kronrod":
        again = replace(again, attribution=replace(again.attribution, kronrod_max_evals=2 * budget))
    elif again.attribution.method == "eg":
        again = replace(again, attribution=replace(again.attribution, n_samples=2 * budget))
    return again


def first_held(trace: np.ndarray, tolerance: float, vector_tolerance: float) -> dict[str, float | None]:
    """Evaluations at which certified's exact averaged residual first held, the residual and its spread
    (``CertifiedSpec.spread_met``), its whole rule, and the rule with App. B.4's own 0.10 as the vector
    tolerance."""
    t = dict(zip(TRACE_COLUMNS, trace.T, strict=True))
    residual = t["residual"] <= tolerance
    spread = residual & CertifiedSpec(tolerance=tolerance).spread_met(t["spread"])
    held = {
        "evals_residual_only": residual,
        "evals_residual_spread": spread,
        "evals_rule": spread & (t["vector"] <= vector_tolerance),
        "evals_rule_vector_0.10": spread & (t["vector"] <= 0.10),
    }
    return {name: float(t["evals"][np.argmax(h)]) if h.any() else None for name, h in held.items()}


def measure(model, q, pool, cfg, pad_id: int, budget: int, second: str = TWICE) -> dict:
    """One method, one question: its run at the budget and its second run (``second_run``; ``second`` is
    ``TWICE``, ``RERUN`` or ``ONCE``: the first run alone), App. B.4's figures."""
    start = time.perf_counter()
    main = attribute_question(model, q, pool, cfg.attribution, pad_id)
    (a,) = main.rows
    record = {
        "grad_evals": int(a.grad_evals),
        "seconds": time.perf_counter() - start,
        "residual": float(a.residual),
        "error_bound": float(a.error_bound),
        "budget_exhausted": bool(a.budget_exhausted),
        "forwards": int(a.forward_evals),
        "width_difference": float(a.width_difference),
        "second_run": second,
    }
    if second != ONCE:
        record.update(against_second_run(model, q, pool, cfg, pad_id, budget, second, a))
    if cfg.attribution.method == "certified":
        at = cfg.attribution
        record.update(first_held(main.traces[0], at.certified_tolerance, at.certified_vector_tolerance))
        record["final_measures"] = main.traces[0][-1, 1:4].tolist()
        record.update(where_references_err(a.reference_residual, a.reference_points))
    return record


def against_second_run(model, q, pool, cfg, pad_id: int, budget: int, second: str, a) -> dict:
    """The second run's figures and App. B.4's vector criteria between it and the first run's row ``a``."""
    start = time.perf_counter()
    (b,) = attribute_question(model, q, pool, second_run(cfg, budget, second).attribution, pad_id).rows
    seconds_2x = time.perf_counter() - start
    e, e2 = a.coords["e"].numpy(), b.coords["e"].numpy()
    m1, m2 = np.asarray(a.token_magnitude), np.asarray(b.token_magnitude)
    return {
        "grad_evals_2x": int(b.grad_evals),
        "seconds_2x": seconds_2x,
        "residual_2x": float(b.residual),
        "error_bound_2x": float(b.error_bound),
        "cosine": cosine(e, e2),
        "distance": relative_distance(e, e2),
        "spearman": spearman(m1, m2),
        "top3": topk_overlap(m1, m2, 3),
    }


def label(at) -> str:
    """The method as the table names it: ``certified+warpN`` with N forwards a reference's path warp,
    ``kronrod+trapezoid`` under ``attribution.kronrod_rule=trapezoid``."""
    if at.method == "certified" and at.certified_warp_points:
        return f"certified+warp{at.certified_warp_points}"
    if at.method == "kronrod":
        rule = f"+{at.kronrod_rule}" if at.kronrod_rule != "k15" else ""
        stop = f"@bound{at.kronrod_tolerance:g}" if at.kronrod_stop == "bound" else ""
        return f"kronrod{rule}{stop}"
    return str(at.method)


def where_references_err(residuals, points) -> dict[str, float | int]:
    """Which references hold certified's error (``certified_diagnosis`` per reference, from the row): the
    largest share of Σ_r rho_r^2 one reference holds (1/M when they share it evenly), the share the top
    eighth of the references hold, and the points a reference got (median, most)."""
    rho2 = np.sort(np.asarray(residuals, dtype=np.float64) ** 2)[::-1]
    total = max(float(rho2.sum()), 1e-300)
    eighth = max(1, len(rho2) // 8)
    return {
        "rho2_top_share": float(rho2[0] / total),
        "rho2_top_eighth_share": float(rho2[:eighth].sum() / total),
        "points_median": float(np.median(points)),
        "points_max": int(np.max(points)),
    }


def run(args) -> None:
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    made = {"command": made_by()}
    for refs, budget in zip(args.refs, args.budgets, strict=True):
        for method in args.methods:
            at = cfg.attribution
            first_pass = kronrod_first_pass(at.kronrod_rule, at.kronrod_intervals, refs)
            if method == "kronrod" and first_pass > budget:  # its config would refuse the budget
                note = {"note": f"first pass of {first_pass} evaluations above the budget {budget}"}
                _write(out, {"method": method, "refs": refs, "budget": budget, **note, **made})
                continue
            mcfg = method_config(cfg, method, refs, budget)
            if method == "kronrod" and args.kronrod_bound:
                bound = {"kronrod_stop": "bound", "kronrod_tolerance": args.kronrod_bound}
                mcfg = replace(mcfg, attribution=replace(mcfg.attribution, **bound))
            questions, pool = explained_questions(model, prompts, mcfg.attribution, args.questions)
            about = {"experiment": args.experiment, "model": train_run_hash(cfg)[:12]}
            about |= {"method": label(mcfg.attribution), "refs": refs, "budget": budget}
            about |= {"run": attribution_fingerprint(mcfg, per_question=True)[:16], "code": code_version()}
            done = finished(out, about, args.second) if args.resume else set()
            for q in questions[args.skip :]:
                if q.record_id in done:
                    print(
                        f"{about['method']} M={refs} {q.record_id}: in {out} already (--resume)", flush=True
                    )
                    continue
                record = measure(model, q, pool, mcfg, pad_id, budget, args.second)
                _write(out, {**about, "question": q.record_id, "tokens": len(q.input_ids), **record, **made})


def finished(out: Path, about: dict, second: str) -> set[str]:
    """The questions ``out`` already holds a record of with every field of ``about`` (the run's content: its
    attribution fingerprint, which holds the classifier's run, and the pipeline's code version) and this
    second run (``TWICE``, ``RERUN`` or ``ONCE``)."""
    if not out.exists():
        return set()
    return {
        r["question"]
        for r in read_records(out)
        if "question" in r and all(r.get(k) == v for k, v in about.items()) and r.get("second_run") == second
    }


def made_by() -> str:
    """The command line as run, with the thread settings it ran under."""
    env = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ]
    return shlex.join([*env, "python", *sys.argv])


def _write(out: Path, record: dict) -> None:
    record["load_average"] = os.getloadavg()[0]
    with out.open("a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


HEADER = (
    "| experiment | method | M | budget | questions | evaluations (median) | forwards (median) | median R "
    "| max R | cosine | rel. distance | Spearman | top-3 | App. B.4 | budget ran out (R reached) "
    "| vectors off (cosine, distance) "
    "| certified: R alone / rule at | second run: evaluations, R (medians) |"
)


def table(rows: list[dict]) -> list[str]:
    """Markdown lines: medians per (experiment, method, M, budget) over the questions, App. B.4's verdict,
    each question whose budget ran out named with the R it reached, and each whose own vectors miss App.
    B.4's cosine or distance against its second run (the verdict reads the medians); first runs alone
    (``--once``) a row of their own, judged on the residual criteria."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        once = r.get("second_run") == ONCE
        groups.setdefault((r.get("experiment", "-"), r["method"], r["refs"], r["budget"], once), []).append(r)
    lines = [HEADER, "|---" * (HEADER.count("|") - 1) + "|"]
    for (exp, method, refs, budget, once), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], *kv[0][2:])
    ):
        done = [r for r in rs if "residual" in r]
        note = f"| {exp} | {method} | {refs} | {budget} | 0 | {rs[0].get('note', '-')} |"
        note += "|" * (HEADER.count("|") - note.count("|"))  # the row's empty cells
        lines.append(_row(exp, method, refs, budget, done, once) if done else note)
    return lines


def _row(exp: str, method: str, refs: int, budget: int, done: list[dict], once: bool = False) -> str:
    """One group's table row; ``once``: the first runs ran alone (``--once``), App. B.4's residual criteria
    only."""
    med = {k: float(np.median([r[k] for r in done])) for k in ("grad_evals", "forwards", "residual")}
    rmax = max(r["residual"] for r in done)
    ok = med["residual"] <= CRITERIA["residual_median"] and rmax <= CRITERIA["residual_max"]
    ran_out = ", ".join(f"{r['question']} ({r['residual']:.3f})" for r in done if r["budget_exhausted"])
    if once:
        vectors, verdict = "- | - | - | -", "residual only: " + ("holds" if ok else "misses")
        off, second = "-", "none (first run alone)"
    else:
        vectors, vectors_ok, off, second = _vector_cells(done)
        verdict = "holds" if ok and vectors_ok else "misses"
    held = "-"
    if method.startswith("certified"):
        alone = [r["evals_residual_only"] for r in done if r.get("evals_residual_only") is not None]
        rule = [r["evals_rule"] for r in done if r.get("evals_rule") is not None]
        held = (f"{np.median(alone):.0f} ({len(alone)} q) / " if alone else "never / ") + (
            f"{np.median(rule):.0f} ({len(rule)} q)" if rule else "never"
        )
    return (
        f"| {exp} | {method} | {refs} | {budget} | {len(done)} | {med['grad_evals']:.0f} | "
        f"{med['forwards']:.0f} | {med['residual']:.4f} | {rmax:.4f} | {vectors} | {verdict} | "
        f"{ran_out or 'none'} | {off} | {held} | {second} |"
    )


def _vector_cells(done: list[dict]) -> tuple[str, bool, str, str]:
    """App. B.4's vector criteria against the second runs: the medians' cells (cosine, distance, Spearman,
    top-3), whether they hold, the questions whose own cosine or distance misses, the second runs' medians."""
    c = CRITERIA
    med = {k: float(np.median([r[k] for r in done])) for k in ("cosine", "distance", "spearman", "top3")}
    ok = med["distance"] <= c["distance"] and all(med[k] >= c[k] for k in ("cosine", "spearman", "top3"))
    off = [r for r in done if r["cosine"] < c["cosine"] or r["distance"] > c["distance"]]
    named = ", ".join(f"{r['question']} ({r['cosine']:.4f}, {r['distance']:.3f})" for r in off)
    evals_2x, residual_2x = (np.median([r[k] for r in done]) for k in ("grad_evals_2x", "residual_2x"))
    cells = f"{med['cosine']:.4f} | {med['distance']:.3f} | {med['spearman']:.3f} | {med['top3']:.2f}"
    return cells, ok, named or "none", f"{evals_2x:.0f}, {residual_2x:.4f}"


def read_records(path: Path) -> list[dict]:
    """The bench's JSON lines."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def kept_table(records: Path, command: str, root: Path = Path()) -> str:
    """The kept Markdown file: the records' file (relative to ``root``) and the commands that made them (each
    record's own, in the order they first appear; ``command`` for records that name none), then the
    table."""
    rows = read_records(root / records)
    commands = list(dict.fromkeys(r.get("command", command) for r in rows))
    return (
        f"Made by `python bench/bench_certified.py --out {records} --table --kept <this file>` from the "
        f"records of `{'`, then `'.join(commands)}`.\n\n" + "\n".join(table(rows)) + "\n"
    )


def command_of(kept: str) -> str:
    """The command a kept table's first line says made its records (the first, where several did)."""
    return kept.splitlines()[0].split("records of `", 1)[1].rsplit("`.", 1)[0].split("`, then `")[0]


def main() -> None:
    parser = experiment_parser(__doc__, "local", 4)
    parser.add_argument("--refs", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--budgets", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--methods", nargs="+", default=["certified", "kronrod", "eg"])
    parser.add_argument("--out", default="results/bench/certified.jsonl")
    add_skip(parser)
    parser.add_argument(
        "--kronrod-bound",
        type=float,
        default=0.0,
        help="kronrod stops by its bound rule at this tolerance (kronrod_stop=bound) instead of App. B.4's "
        "per-reference residual rule",
    )
    second = parser.add_mutually_exclusive_group()
    second.add_argument(
        "--rerun",
        action="store_true",
        help="the second run is the attribute stage's own rerun at the same budget and tolerances "
        "(certified: other shifts), not App. B.4's run at twice the budget",
    )
    second.add_argument(
        "--once",
        action="store_true",
        help="the first run alone: its evaluations and App. B.4's residual criteria, no vector figures "
        "(for cells whose second run the time does not allow)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="leave out each (method, question, M, budget) --out already holds",
    )
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--kept", help="with --table: write the table here, headed by --command")
    parser.add_argument("--command", default="", help="with --kept: the command of records that name none")
    args = parser.parse_args()
    args.second = RERUN if args.rerun else ONCE if args.once else TWICE
    if not args.table:
        check_skip(parser, args)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if args.table:
        print("\n".join(table(read_records(Path(args.out)))))
        if args.kept:
            Path(args.kept).write_text(kept_table(Path(args.out), args.command))
        return
    run(args)


if __name__ == "__main__":
    main()
