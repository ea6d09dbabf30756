"""Benchmark 19: gradient evaluations to App. B.4 against the number of training references (the paper's
reference counts priced), and MedQA questions per hour.

    python bench/kronrod_references.py --experiment medqa_local --override KEY=VALUE ... \
        [--questions 8] [--skip 0] [--refs 4 16] [--per-ref-budget 150] [--stop bound] \
        [--lead bound residual] [--estimators kronrod ig_adaptive] [--ig-max-points 1024] \
        [--eg-samples 64] [--project 64 256] \
        [--out results/bench/kronrod_references.jsonl] [--table]

For each of the first ``--questions`` questions the ``attribute`` stage explains and each reference count M in
``--refs`` (its first M training references, prepared as the stage prepares them), one ``kronrod`` run with
the rule ``--stop`` at tolerance 0.01 and ``--per-ref-budget`` x M evaluations. Each rule leads its own
refinement (the reference that fails it most is bisected: tests/attribution/test_quadrature.py), so the
record's ``lead`` names the rule that ordered the run, and both rules are read from its trace:

- ``residual``: App. B.4 for complete IG integrals, each reference's exact residual checked before averaging
  (mean <= 0.01, max <= 0.05): the evaluations and seconds when it first holds (with ``--stop bound``, where
  the bound-led order, the estimator's only order before the residual lead, first meets it: the before of
  a before-and-after on the same questions);
- ``bound``: the mean per-reference error bound (|K15 - G7| or the exact residual) <= 0.01; "> budget" when
  the run ended first ("-" with ``--stop residual``, which ends the run at the first rule: cheaper, for many
  references).

Beside them EG with ``--eg-samples`` draws over the same M references: the draws for a 95% half-width of
0.01, (1.96 s / 0.01)^2 from the draws' spread s, a projection (EG's error shrinks as 1/sqrt(n)). Zero-
masking's cost per question (Eq. 8 at k = 1: the top token against 20 random ones) is timed as 21 forwards.

``--estimators kronrod ig_adaptive`` adds adaptive IG (``ig_adaptive``: its own per-reference rule, its whole
schedule up to ``--ig-max-points`` as the budget) after kronrod's runs of each question.
``--lead bound residual`` measures each question under both orders back to back, so the before-and-after
(evaluations and seconds) is side by side in one run. Each (estimator, question, M, lead) is one JSON line
appended to ``--out``; a rerun skips the records measured with the same estimator, question, M, budget,
stopping rule, lead and trained model (its config hash; records without a ``lead``
were measured before the residual lead, so bound-led).
``--table`` prints, from ``--out`` (one record per estimator, lead, question and M: the last), the per-pair
table, the medians per M, the projection to ``--project`` reference counts (the median evaluations per
reference x M: labelled projected), MedQA questions per hour under each rule, and the planning table
(estimator x M, each cell measured or projected).
Needs the trained model (`xurs params experiment=... && dvc repro train`).
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _trained import add_skip, check_skip, experiment_parser, explained_questions, load

from xurs_pipeline.attribution.config import STOP_RULES
from xurs_pipeline.attribution.endpoints import input_width, prompt_of
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.model import model_device
from xurs_pipeline.attribution.quadrature import TRACE_COLUMNS, KronrodSpec
from xurs_pipeline.config import train_run_hash

TOLERANCE = 0.01
Z_95 = 1.959963984540054
MASKING_FORWARDS = 21  # Eq. 8 at k = 1: the top token and 20 random eligible tokens


def first_step(trace: np.ndarray, rule: str) -> dict[str, float | None]:
    """Evaluations and seconds at the first step of ``trace`` (steps, 5) where ``rule`` holds (None: never)"""
    t = dict(zip(TRACE_COLUMNS, trace.T, strict=True))
    held = KronrodSpec(TOLERANCE, stop=rule).met(t["mean_bound"], t["mean_residual"], t["max_residual"])
    if not held.any():
        return {"evals": None, "seconds": None}
    k = int(np.argmax(held))
    return {"evals": float(t["evals"][k]), "seconds": float(t["seconds"][k])}


def masking_seconds(model, q, target_fn: str) -> float:
    """Seconds for Eq. 8's forwards of one question (k = 1), timed as 21 forwards of it."""
    prompt = prompt_of(model, q.input_ids, model_device(model))
    start = time.perf_counter()
    for _ in range(MASKING_FORWARDS):
        input_width(model, prompt, target_fn)
    return time.perf_counter() - start


def measure(model, q, pool, cfg, pad_id: int) -> dict:
    """One (question, M, lead) record of ``kronrod`` under ``cfg`` (:func:`_config`): both rules from one
    trace whose refinement ``attribution.kronrod_lead`` ordered."""
    result = attribute_question(model, q, pool, cfg, pad_id)
    (row,), (trace,) = result.rows, result.traces
    rules = {"residual_rule": first_step(trace, "residual"), "bound_rule": first_step(trace, "bound")}
    return _record(q, cfg, row, float(trace[-1, -1]), cfg.kronrod_lead, rules)


def measure_ig(model, q, pool, cfg, pad_id: int) -> dict:
    """One (question, M) record of adaptive IG under ``cfg`` (``ig_adaptive``, Gauss-Legendre from
    ``ig_points``, x ``ig_refine_factor`` up to ``--ig-max-points``, each level recomputed): its own rule,
    every reference's residual <= 0.01, implies App. B.4's (mean <= 0.01, max <= 0.05), so its evaluations
    at the stop bound from above where it certifies (App. B.4's may hold earlier); "> budget" when a
    reference reached the last level above 0.01."""
    start = time.perf_counter()
    row = attribute_question(model, q, pool, cfg, pad_id).rows[0]
    seconds = time.perf_counter() - start
    never = {"evals": None, "seconds": None}
    held = never if row.budget_exhausted else {"evals": float(row.grad_evals), "seconds": seconds}
    return _record(q, cfg, row, seconds, "residual", {"residual_rule": held, "bound_rule": never})


def _record(q, cfg, row, seconds: float, lead: str, rules: dict) -> dict:
    """The fields every record has: what was run (estimator, question, M, budget, stopping rule, lead), where
    each rule first held (``rules``) and the run's end (evaluations, R, bound, seconds)."""
    return {
        "estimator": _estimator(cfg),
        "question": q.record_id,
        "tokens": len(q.input_ids),
        "refs": cfg.refs_per_collection,
        "budget": cfg.gradient_budget().per_question,
        "stop": _stop(cfg),
        "lead": lead,
        **rules,
        "exhausted": row.budget_exhausted,
        "final": {"evals": row.grad_evals, "R": row.residual, "bound": row.error_bound, "seconds": seconds},
    }


def eg_and_masking(model, q, pool, cfg, pad_id: int, args) -> dict:
    """EG with ``--eg-samples`` draws over the same references (the draws for a 95% half-width of 0.01,
    projected from their spread) and zero-masking's seconds for the question."""
    eg_cfg = replace(cfg, method="eg", n_samples=args.eg_samples)
    eg = attribute_question(model, q, pool, eg_cfg, pad_id).rows[0]
    spread = eg.error_bound * np.sqrt(eg.grad_evals) / Z_95
    return {
        "eg": {
            "draws": eg.grad_evals,
            "R": eg.residual,
            "s": spread,
            "draws_for_0.01": (Z_95 * spread / TOLERANCE) ** 2,
        },
        "masking_seconds": masking_seconds(model, q, cfg.target_fn),
    }


def _config(at, m: int, estimator: str, args, lead: str = "stop"):
    """The attribution settings of one run at M references: kronrod with ``--stop``, its refinement led by
    ``lead`` (``attribution.kronrod_lead``) and ``--per-ref-budget`` x M evaluations, or adaptive IG up to
    ``--ig-max-points`` (led by its own residuals); tolerance 0.01 either way."""
    cfg = replace(at, refs_per_collection=m, n_collections=1)
    if estimator == "kronrod":
        return replace(
            cfg,
            method="kronrod",
            kronrod_stop=args.stop,
            kronrod_lead=lead,
            kronrod_tolerance=TOLERANCE,
            kronrod_max_evals=args.per_ref_budget * m,
        )
    return replace(
        cfg, method="ig", ig_adaptive=True, ig_tolerance=TOLERANCE, ig_max_points=args.ig_max_points
    )


def _budget(at, m: int, estimator: str, args) -> int:
    """A run's most evaluations: kronrod's ``--per-ref-budget`` x M, adaptive IG's whole schedule."""
    return _config(at, m, estimator, args).gradient_budget().per_question


def _estimator(cfg) -> str:
    return "kronrod" if cfg.method == "kronrod" else "ig_adaptive"


def _stop(cfg) -> str:
    """The stopping rule a run's record names (adaptive IG's per-reference rule is a residual rule)."""
    return cfg.kronrod_stop if cfg.method == "kronrod" else "residual"


def _runs(args) -> list[tuple[str, str]]:
    """(estimator, lead) of each run of a question, back to back: kronrod under each ``--lead``, then
    adaptive IG (led by its per-reference residuals) if asked."""
    runs = [("kronrod", lead) for lead in args.lead] if "kronrod" in args.estimators else []
    return runs + ([("ig_adaptive", "residual")] if "ig_adaptive" in args.estimators else [])


def run(args) -> None:
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    at = replace(cfg.attribution, progress=False, refs_per_collection=max(args.refs))
    questions, pool = explained_questions(model, prompts, at, args.questions)
    questions = questions[args.skip :]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    model_hash = train_run_hash(cfg)  # a record is reused only for the same trained model and settings
    done = {_key(r) for r in records(out)}
    shared: dict[tuple[str, int], dict] = {}  # EG and zero-masking: once per question and M, whatever runs
    for m in args.refs:
        for q, (estimator, lead) in itertools.product(questions, _runs(args)):  # a question's back to back
            run_cfg = _config(at, m, estimator, args, lead)
            settings = {
                "estimator": estimator,
                "question": q.record_id,
                "refs": m,
                "lead": lead,
                "budget": _budget(at, m, estimator, args),
                "stop": _stop(run_cfg),
                "model": model_hash,
            }
            if _key(settings) in done:
                continue
            measured = (
                measure(model, q, pool, run_cfg, pad_id)
                if estimator == "kronrod"
                else measure_ig(model, q, pool, run_cfg, pad_id)
            )
            if (q.record_id, m) not in shared:
                shared[q.record_id, m] = eg_and_masking(model, q, pool, run_cfg, pad_id, args)
            record = {**measured, **shared[q.record_id, m], "model": model_hash}
            with out.open("a") as f:
                f.write(json.dumps(record) + "\n")
            rule = record["residual_rule"]["evals"]
            print(
                f"  {q.record_id} M={m} {_label(record)}: App. B.4 at {rule}, load {C.load_average()}",
                flush=True,
            )


def _key(record: dict) -> tuple:
    """What a record was measured with: estimator (kronrod before IG was measured), question, M, budget,
    stopping rule, the rule that led its refinement (bound before the residual lead existed) and the trained
    model's config hash."""
    return (
        record.get("estimator", "kronrod"),
        record["question"],
        record["refs"],
        record["budget"],
        record.get("stop"),
        _lead(record),
        record.get("model"),
    )


def _lead(record: dict) -> str:
    """The rule that ordered a record's refinement (records from before the residual lead: bound)."""
    return record.get("lead", "bound")


def _label(record: dict) -> str:
    """The estimator and its refinement order: "kronrod, bound-led" or "residual-led", or "adaptive IG"."""
    if record.get("estimator", "kronrod") == "ig_adaptive":
        return "adaptive IG"
    return f"kronrod, {_lead(record)}-led"


def latest(rows: list[dict]) -> list[dict]:
    """One record per estimator, refinement lead, question and M: the last appended (the estimator is
    deterministic, so a remeasurement under another budget or stopping rule repeats the evaluations to App.
    B.4; a question counts once in the medians). Files of several trained models: table them apart."""
    by_pair = {(r.get("estimator", "kronrod"), _lead(r), r["question"], r["refs"]): r for r in rows}
    return list(by_pair.values())


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _evals(record: dict, rule: str) -> str:
    """The evaluations at which ``rule`` first held: "> budget" if never, "-" if the run stopped before or
    has no such rule (adaptive IG has no error bound beyond its residuals)."""
    evals = record[rule]["evals"]
    if evals is not None:
        return f"{evals:,.0f}"
    if rule == "bound_rule" and record.get("estimator") == "ig_adaptive":
        return "-"
    stopped_first = record.get("stop", "bound") != rule.removesuffix("_rule") and not record["exhausted"]
    return "-" if stopped_first else f"> {record['budget']:,}"


def _median(values: list[float | None]) -> float | None:
    """The median, None if more than half are missing (a missing value is above the budget)."""
    known = sorted(v for v in values if v is not None)
    if len(known) * 2 <= len(values):
        return None
    padded = known + [np.inf] * (len(values) - len(known))
    return float(np.median(padded))


def table(args) -> None:
    rows = latest(records(Path(args.out)))
    per_pair = [
        (
            r["question"],
            r["tokens"],
            r["refs"],
            _label(r),
            _evals(r, "residual_rule"),
            _evals(r, "bound_rule"),
            f"{r['final']['R']:.4f}",
            f"{r['final']['bound']:.4f}",
            f"{r['final']['seconds'] / r['final']['evals']:.2f}",
            f"{r['eg']['draws_for_0.01']:,.0f}",
        )
        for r in rows
    ]
    print(
        C.markdown_table(
            [
                "question",
                "tokens",
                "M",
                "estimator",
                "evaluations to App. B.4 (residual rule)",
                "to the bound",
                "R at end",
                "bound at end",
                "s / evaluation",
                "EG draws for 0.01 (projected)",
            ],
            per_pair,
        )
    )
    print()
    summary = []
    for label in _labels(rows):
        led = [r for r in rows if _label(r) == label]
        summary += [
            _summary_row(m, label, [r for r in led if r["refs"] == m])
            for m in sorted({r["refs"] for r in led})
        ]
        unit = _per_reference(led)
        projected = [(m, label, "-", "projected", _fmt(_times(unit, m))) + ("-",) * 4 for m in args.project]
        summary += projected
        print(f"projection, {label}: {_fmt(unit)} evaluations per reference (median over measured pairs) x M")
    print(
        C.markdown_table(
            [
                "M",
                "estimator",
                "questions",
                "",
                "median evaluations, residual rule",
                "bound rule",
                "EG draws (projected from s)",
                "questions / hour, residual rule",
                "bound rule",
            ],
            summary,
        )
    )
    print()
    print(planning_table(rows, sorted({r["refs"] for r in rows} | set(args.project))))


def planning_table(rows: list[dict], counts: list[int]) -> str:
    """The table a run is planned with: gradient evaluations a question to App. B.4, estimator x number of
    references M. Each cell is measured (the median over the questions run at M, their count given) or
    projected (the median evaluations per reference over all measured pairs, x M); EG's row is the draws
    for a 95% half-width of 0.01 from the measured spread s (projected by nature; at an M not run, from s
    at the nearest M that was)."""
    body = []
    for label in _labels(rows):
        led = [r for r in rows if _label(r) == label]
        unit = _per_reference(led)
        cells = []
        for m in counts:
            at_m = [r["residual_rule"]["evals"] for r in led if r["refs"] == m]
            measured = f"{_fmt(_median(at_m))} (measured, {len(at_m)} q)" if at_m else None
            cells.append(measured or f"{_fmt(_times(unit, m))} (projected)")
        body.append((label, *cells))
    draws = {(r["question"], r["refs"]): r["eg"]["draws_for_0.01"] for r in rows}  # one EG run per pair
    eg_cells = []
    for m in counts:
        run_at = min({k[1] for k in draws}, key=lambda n: (abs(n - m), n))
        at = [d for (_, n), d in draws.items() if n == run_at]
        where = f", {len(at)} q" if run_at == m else f" at M = {run_at}"
        eg_cells.append(f"{np.median(at):,.0f} (projected from s{where})")
    body.append(("EG (the paper's)", *eg_cells))
    return C.markdown_table(["evaluations a question to App. B.4", *(f"M = {m}" for m in counts)], body)


def _labels(rows: list[dict]) -> list[str]:
    return sorted({_label(r) for r in rows}, reverse=True)


def _per_reference(rows: list[dict]) -> float | None:
    """The median evaluations to App. B.4 per reference over ``rows`` (a run that never met it counts as
    above; None if most did not)."""
    return _median(
        [
            None if r["residual_rule"]["evals"] is None else r["residual_rule"]["evals"] / r["refs"]
            for r in rows
        ]
    )


def _times(unit: float | None, m: int) -> float | None:
    return None if unit is None else unit * m


def _summary_row(m: int, label: str, at_m: list[dict]) -> tuple:
    """Medians over the questions measured at M references with one estimator (``label``)."""
    bound_runs = [r for r in at_m if r.get("stop", "bound") == "bound"]  # the others stopped before it
    res = _median([r["residual_rule"]["evals"] for r in at_m])
    bnd = _median([r["bound_rule"]["evals"] for r in bound_runs]) if bound_runs else None
    eg = float(np.median([r["eg"]["draws_for_0.01"] for r in at_m]))
    hours = [_per_hour(at_m, "residual_rule"), _per_hour(bound_runs, "bound_rule") if bound_runs else "-"]
    runs = f"{len(bound_runs)} run{'s' * (len(bound_runs) != 1)}"
    bound_text = f"{_fmt(bnd)} ({runs})" if bound_runs else "-"
    return (m, label, len(at_m), "measured", _fmt(res), bound_text, f"{eg:,.0f}", *hours)


def _fmt(value: float | None) -> str:
    return "above the budget" if value is None or np.isinf(value) else f"{value:,.0f}"


def _per_hour(rows: list[dict], rule: str) -> str:
    """MedQA questions per hour end to end: attribution to the rule plus zero-masking, median seconds."""
    seconds = [r[rule]["seconds"] + r["masking_seconds"] for r in rows if r[rule]["seconds"] is not None]
    if len(seconds) * 2 <= len(rows):
        return "-"
    return f"{3600 / np.median(seconds):.1f}"


def main() -> None:
    parser = experiment_parser(__doc__, "medqa_local", 8)
    parser.add_argument("--refs", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--per-ref-budget", type=int, default=150)
    parser.add_argument("--stop", choices=STOP_RULES, default="bound", help="kronrod_stop")
    parser.add_argument(
        "--lead",
        choices=STOP_RULES,
        nargs="+",
        default=None,
        help="attribution.kronrod_lead of each run of every question, back to back (default: --stop's;"
        " bound: the order before the residual lead; bound residual: before and after in one run)",
    )
    parser.add_argument(
        "--estimators",
        choices=("kronrod", "ig_adaptive"),
        nargs="+",
        default=["kronrod"],
        help="kronrod (under each --lead) and/or adaptive IG, each a run of every question, back to back",
    )
    parser.add_argument("--ig-max-points", type=int, default=1024, help="adaptive IG's last level (points)")
    add_skip(parser)
    parser.add_argument(
        "--eg-samples", type=int, default=64, help="EG's draws a question, for its projection (>= 1)"
    )
    parser.add_argument("--project", type=int, nargs="*", default=[64, 256])
    parser.add_argument("--out", default="results/bench/kronrod_references.jsonl")
    parser.add_argument("--table", action="store_true", help="print the tables from --out, run nothing")
    args = parser.parse_args()
    if args.eg_samples < 1:
        parser.error(f"--eg-samples={args.eg_samples}: must be >= 1 (every record projects EG's draws)")
    args.lead = args.lead or [args.stop]
    if not args.table:
        check_skip(parser, args)
    C.print_header("Evaluations to App. B.4 against training references", " ".join(sys.argv))
    table(args) if args.table else run(args)
    print(f"load average at end: {C.load_average()}")


if __name__ == "__main__":
    main()
