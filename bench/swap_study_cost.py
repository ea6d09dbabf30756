"""Benchmark: what one seed of the swap study costs, part by part, with every method and yardstick.

    python bench/swap_study_cost.py [--experiment controlled_swap] [--override KEY=VALUE ...]

Run in a project where ``xurs params experiment=... <overrides> && dvc repro swap`` has run (the same
overrides here). Times, on the study's own inputs (``tasks.swap.study_inputs``): each method that runs a
model (``evaluation.swap_methods``, both trained models, one method at a time), the behaviour's text edits,
each other edit yardstick, the planted-text validation, the faithfulness statistics (yardstick x model x
order cells, binomial, McNemar and the model bootstrap) and the whole ``run_study``. Prints per part the
seconds, the ratio to the text edits and the model evaluations per probe and model, with the load average
before and after. The attribute stages' cost (the paper's estimator) is not in it: see
``bench/bench_swap_cost.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from diagnose_paths import experiment_parser

from xurs_pipeline.config import compose, validate
from xurs_pipeline.evaluation.swap.faithfulness import FaithfulnessInputs, study_faithfulness
from xurs_pipeline.evaluation.swap.planted_texts import recovery
from xurs_pipeline.evaluation.swap.readings import NULL_METHODS, RUN_METHOD, method_config, model_readings
from xurs_pipeline.evaluation.swap.roles import ROLES, RUNS
from xurs_pipeline.evaluation.swap.study import (
    model_behaviour,
    probe_set,
    readings,
    role_test_accuracy,
    run_study,
    width_readers,
)
from xurs_pipeline.evaluation.swap.yardsticks import EDIT_YARDSTICKS, EDITS, yardstick_widths
from xurs_pipeline.tasks.swap import study_inputs


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_swap", 0)
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header("Swap study: seconds per part of one seed", " ".join(sys.argv))
    cfg = validate(compose([f"experiment={args.experiment}", *args.override], conf_dir=Path.cwd() / "conf"))
    inputs = study_inputs(cfg)
    probes = probe_set(inputs)
    n = len(probes.ids)
    parts: list[tuple[str, float, str]] = []
    ev = cfg.evaluation
    for method in (m for m in ev.swap_methods if m != RUN_METHOD and m not in NULL_METHODS):
        config = method_config(method, ev.swap_layer_ig_steps)
        frames, seconds = timed(lambda c=config: [
            model_readings(inputs.models[r.role.name][0], name, probes, [c])
            for name, r in RUNS.items() if not r.randomised])  # fmt: skip
        evals = sum(int(f["evals"].sum()) for f in frames) / (2 * n)
        parts.append((f"method {method}", seconds, f"{evals:.0f}"))
    behaviour, base = timed(lambda: model_behaviour(inputs))
    parts.append(("yardstick text_edits (behaviour)", base, "5"))
    readers = width_readers(inputs)
    for y in EDIT_YARDSTICKS[1:]:
        one = inputs.records[0]
        per = 1 + len(EDITS[y](one, 0)) + len(EDITS[y](one, 1))
        _, seconds = timed(lambda y=y: [yardstick_widths(inputs.records, r, y) for r in readers.values()])
        parts.append((f"yardstick {y}", seconds, str(per)))
    measured = readings(inputs, probes)
    accuracy = {name: role_test_accuracy(cfg, inputs.prompts, inputs.models[name], role.cue)
                for name, role in ROLES.items()}  # fmt: skip
    trained = measured[measured["run"].isin([k for k, r in RUNS.items() if not r.randomised])]
    fi = FaithfulnessInputs(inputs.records, readers, behaviour, trained, dict(probes.cues), accuracy)
    _, seconds = timed(lambda: study_faithfulness(fi, ev.swap_clear_margin, ev.confidence, ev.seed,
                                                  ev.bootstrap_resamples))  # fmt: skip
    parts.append(("faithfulness: the other yardsticks again, planted validation, tests", seconds, "-"))
    _, seconds = timed(lambda: recovery(inputs.records))
    parts.append(("of which the planted-text validation", seconds, "0"))
    _, seconds = timed(lambda: run_study(inputs))
    parts.append(("whole run_study (swap stage)", seconds, "-"))
    rows = [(name, f"{s:.1f}", f"{s / base:.2f}", evals) for name, s, evals in parts]
    print(f"{n} probes, 2 trained models")
    print(C.markdown_table(["part", "s", "s / text_edits", "model evaluations per probe and model"], rows))
    C.print_footer(started)


if __name__ == "__main__":
    main()
