"""Benchmark: the paper's estimator on the swap study's probes under kronrod's ``read`` rule against the
study's ``bound`` rule, side by side.

    python bench/swap_read_rule.py --override KEY=VALUE ... [--questions 8] [--rules bound read] \
        --out results/swap_learning/read_rule.jsonl
    python bench/swap_read_rule.py --out results/swap_learning/read_rule.jsonl --table

Run where ``xurs params experiment=controlled_swap <overrides> && dvc repro train`` has run (model A, the
``attribute`` stage's model). For each of the first ``--questions`` probes the stage explains, back to back,
one ``kronrod`` run per rule in ``--rules`` with the experiment's attribution settings otherwise (its
tolerance, budget, references): the gradient evaluations and seconds it took, its completeness residual R
(Eq. 9), whether it ran out of budget, each cue's summed token magnitude (the study's cue score,
``evaluation/swap/plan.CUE_SCORE``) and the cue it ranks first; the ``read`` run also its final margin
(``attribution/read_order.py``). One JSON line per (probe, rule) appended to ``--out``; a rerun skips the
pairs measured with the same trained model. ``--table`` prints each probe's rules side by side, whether
they rank the same cue first, and the median evaluations and seconds of each rule with their ratio.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _trained import experiment_parser, explained_questions, load

from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.config import train_run_hash
from xurs_pipeline.evaluation.swap.faithfulness import cue_first
from xurs_pipeline.evaluation.swap.readings import token_reading


def cue_totals(magnitude: list[float], cues: tuple[tuple[int, ...], ...]) -> list[float]:
    """Each cue's summed token magnitude, the study's cue score, as the study reads it
    (``evaluation/swap/readings.token_reading``)."""
    return list(token_reading(magnitude, cues).total)


def first_cue(totals: list[float]) -> int:
    """The cue the study ranks first from those scores (``faithfulness.cue_first``: 0 on a tie)."""
    return int(cue_first(pd.DataFrame([{"total_1": totals[0], "total_2": totals[1]}])).iloc[0])


def measure(model, q, pool, at, rule: str, pad_id: int) -> dict:
    """One kronrod run of probe ``q`` under ``rule``: its record (module docstring)."""
    cfg = replace(at, kronrod_stop=rule, kronrod_lead="stop")
    start = time.perf_counter()
    result = attribute_question(model, q, pool, cfg, pad_id)
    seconds = time.perf_counter() - start
    (row,), (trace,) = result.rows, result.traces
    totals = cue_totals(row.token_magnitude, q.read)
    return {
        "question": q.record_id,
        "rule": rule,
        "evals": int(row.grad_evals),
        "seconds": seconds,
        "R": float(row.residual),
        "exhausted": bool(row.budget_exhausted),
        "totals": totals,
        "top": first_cue(totals),
        "margin": float(trace[-1, 4]),
        "tolerance": cfg.kronrod_tolerance,
        "budget": cfg.kronrod_max_evals,
    }


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run(args) -> None:
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    at = replace(cfg.attribution, progress=False, kronrod_stop="read")  # the probes with their cues
    questions, pool = explained_questions(model, prompts, at, args.questions)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    model_hash = train_run_hash(cfg)
    done = {(r["question"], r["rule"]) for r in records(out) if r.get("model") == model_hash}
    for q in questions:
        for rule in args.rules:
            if (q.record_id, rule) in done:
                continue
            record = {
                **measure(model, q, pool, at, rule, pad_id),
                "model": model_hash,
                "machine": C.machine_facts(),
            }
            print(json.dumps(record), flush=True)
            with out.open("a") as f:
                f.write(json.dumps(record) + "\n")


def table(path: Path) -> None:
    """Each probe's rules side by side, then the medians and their ratio."""
    by_probe: dict[str, dict[str, dict]] = {}
    for r in records(path):
        by_probe.setdefault(r["question"], {})[r["rule"]] = r
    rules = sorted({rule for runs in by_probe.values() for rule in runs})
    head = " | ".join(f"{rule}: evals, s, R, top" for rule in rules)
    print(f"| probe | {head} | same top |\n|---|{'---|' * len(rules)}---|")
    agree, both = 0, 0
    for probe, runs in by_probe.items():
        cells = []
        for rule in rules:
            r = runs.get(rule)
            flag = " (exhausted)" if r and r["exhausted"] else ""
            cells.append(f"{r['evals']}, {r['seconds']:.0f}, {r['R']:.4f}, {r['top']}{flag}" if r else "-")
        same = "-"
        if len(runs) == len(rules) == 2:
            both += 1
            same = "yes" if len({r["top"] for r in runs.values()}) == 1 else "no"
            agree += same == "yes"
        print(f"| {probe} | {' | '.join(cells)} | {same} |")
    print("\n| rule | probes | median evaluations | median seconds |\n|---|---|---|---|")
    for rule in rules:
        evals = [runs[rule]["evals"] for runs in by_probe.values() if rule in runs]
        secs = [runs[rule]["seconds"] for runs in by_probe.values() if rule in runs]
        print(f"| {rule} | {len(evals)} | {np.median(evals):.0f} | {np.median(secs):.0f} |")
    paired = [runs for runs in by_probe.values() if len(runs) == len(rules) == 2]
    if paired:
        a, b = rules
        ratio = np.median([r[b]["evals"] for r in paired]) / np.median([r[a]["evals"] for r in paired])
        print(f"\n| paired probes | {b} / {a} median evaluations | the same cue first |\n|---|---|---|")
        print(f"| {len(paired)} | {ratio:.2f} | {agree} of {both} |")


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_swap", 8)
    parser.add_argument("--rules", nargs="+", default=["bound", "read"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.table:
        table(Path(args.out))
    else:
        run(args)


if __name__ == "__main__":
    main()
