"""Benchmark: what one seed of the swap study costs, part by part, with every method and yardstick.

    python bench/swap_study_cost.py [--experiment controlled_swap] [--override KEY=VALUE ...]

Run in a project where ``xurs params experiment=... <overrides> && dvc repro swap`` has run (the same
overrides here). Times, on the study's own inputs (``tasks.swap.study_inputs``), every part interleaved over
``--rounds`` rounds after a warm-up (order rotated; medians of wall and CPU seconds): each method that runs a
model (``evaluation.swap_methods``, both trained models, one method at a time), the behaviour's text edits,
each other edit yardstick, the planted text and embedding models; then the whole ``run_study`` once.
Prints per part the seconds, the ratios to the text edits and the model evaluations per probe and model,
with the load average before and after. ``--methods-only``: each method's CPU and wall seconds, forwards and
gradient evaluations per probe under model A from one reading (the equal-terms grid on a shared machine).
The attribute stages' cost (the paper's estimator from its runs) is not in it: see
``bench/bench_swap_cost.py``; its reruns from other references (``paper@references=...``) are.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
import numpy as np
from _trained import experiment_parser

from xurs_pipeline.attribution.config import TOKEN_METHODS
from xurs_pipeline.attribution.variants import variant_name
from xurs_pipeline.config import compose, validate
from xurs_pipeline.evaluation.swap.planted_methods import method_recovery
from xurs_pipeline.evaluation.swap.planted_texts import recovery
from xurs_pipeline.evaluation.swap.readings import NULL_METHODS, RUN_METHOD, method_configs, model_readings
from xurs_pipeline.evaluation.swap.roles import RUNS
from xurs_pipeline.evaluation.swap.study import (
    model_behaviour,
    probe_set,
    run_study,
    width_readers,
)
from xurs_pipeline.evaluation.swap.yardsticks import EDITS, YARDSTICKS, yardstick_widths
from xurs_pipeline.tasks.swap import study_inputs


def parts(cfg, inputs, probes) -> tuple[dict[str, Callable[[int], object]], dict[str, str]]:
    """Part name -> a call doing it once; part name -> model evaluations per probe and model."""
    ev, trained = cfg.evaluation, [(name, r.role.name) for name, r in RUNS.items() if not r.randomised]
    calls: dict[str, Callable[[int], object]] = {}
    evals: dict[str, str] = {}
    for method in (m for m in ev.swap_methods if m != RUN_METHOD and m not in NULL_METHODS):
        config = method_configs([method], ev.swap_layer_ig_steps, cfg.attribution)
        calls[f"method {method}"] = lambda _, c=config: [
            model_readings(inputs.models[role][0], name, probes, c) for name, role in trained
        ]
    readers = width_readers(inputs)
    calls["yardstick text_edits (behaviour)"] = lambda _: model_behaviour(inputs.records, readers)
    evals["yardstick text_edits (behaviour)"] = "5"
    for y in YARDSTICKS[1:]:
        calls[f"yardstick {y}"] = lambda _, y=y: [
            yardstick_widths(inputs.records, r, y) for r in readers.values()
        ]
        evals[f"yardstick {y}"] = str(1 + sum(len(EDITS[y](inputs.records[0], k)) for k in (0, 1)))
    calls["planted text models (validation)"] = lambda _: recovery(inputs.records)
    methods = [m for m in ev.swap_methods if variant_name(m) in TOKEN_METHODS]
    calls["planted embedding models"] = lambda _: method_recovery(methods, ev.swap_layer_ig_steps)
    evals["planted text models (validation)"] = evals["planted embedding models"] = "0"
    return calls, evals


def method_costs(inputs, probes, cfg) -> dict[str, dict[str, float]]:
    """Each method's cost per probe under model A, from one reading of every probe (no warm-up): CPU and
    wall seconds, and the median forwards and gradient evaluations."""
    out = {}
    ev = cfg.evaluation
    for method in (m for m in ev.swap_methods if m != RUN_METHOD and m not in NULL_METHODS):
        config = method_configs([method], ev.swap_layer_ig_steps, cfg.attribution)
        start, start_cpu = time.perf_counter(), time.process_time()
        frame = model_readings(inputs.models["A"][0], "A", probes, config)
        n = len(probes.ids)
        out[f"method {method}"] = {
            "cpu": (time.process_time() - start_cpu) / n,
            "wall": (time.perf_counter() - start) / n,
            "forwards": float(frame["forwards"].median()),
            "grad_evals": float(frame["grad_evals"].median()),
        }
    return out


def print_method_costs(costs: dict[str, dict[str, float]]) -> None:
    rows = [
        (
            name.removeprefix("method "),
            f"{c['cpu']:.2f}",
            f"{c['wall']:.2f}",
            f"{c['forwards']:.0f}",
            f"{c['grad_evals']:.0f}",
        )
        for name, c in costs.items()
    ]
    print(
        C.markdown_table(
            [
                "method",
                "CPU s per probe",
                "wall s per probe",
                "forwards per probe",
                "gradient evaluations per probe",
            ],
            rows,
        )
    )


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_swap", 0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--methods-only",
        action="store_true",
        help="only each method's cost per probe under model A, one reading, no warm-up",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header("Swap study: seconds per part of one seed", " ".join(sys.argv))
    cfg = validate(compose([f"experiment={args.experiment}", *args.override], conf_dir=Path.cwd() / "conf"))
    inputs = study_inputs(cfg)
    probes = probe_set(inputs)
    costs = method_costs(inputs, probes, cfg)
    if args.methods_only:
        print(f"{len(probes.ids)} probes, model A, one reading of each method (no warm-up)")
        print_method_costs(costs)
        C.print_footer(started)
        return
    calls, evals = parts(cfg, inputs, probes)
    evals.update({name: f"{c['forwards'] + c['grad_evals']:.0f}" for name, c in costs.items()})
    wall, cpu = C.interleaved(calls, args.rounds)
    base = "yardstick text_edits (behaviour)"
    rows = [
        (
            name,
            f"{np.median(wall[name]):.2f}",
            f"{np.median(cpu[name]):.2f}",
            f"{C.median_ratio(wall, name, base):.2f}",
            f"{C.median_ratio(cpu, name, base):.2f}",
            evals[name],
        )
        for name in calls
    ]
    print(f"{len(probes.ids)} probes, 2 trained models, {args.rounds} rounds (median; order rotated)")
    print(
        C.markdown_table(
            [
                "part",
                "wall s",
                "CPU s",
                "wall / text_edits",
                "CPU / text_edits",
                "model evaluations per probe and model",
            ],
            rows,
        )
    )
    whole, whole_cpu = C.interleaved({"run_study": lambda _: run_study(inputs)}, 1, warmup=0)
    print(
        f"\nthe whole swap stage's study (run_study, once): {whole['run_study'][0]:.1f} s wall, "
        f"{whole_cpu['run_study'][0]:.1f} s CPU"
    )
    C.print_footer(started)


if __name__ == "__main__":
    main()
