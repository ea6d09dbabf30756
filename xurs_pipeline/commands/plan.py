"""``xurs plan``: parameters, peak memory per stage, gradient evaluations and projected time of a composed
config on a device, before anything runs (logic in ``xurs_pipeline.planning``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from xurs_pipeline.commands.args import non_negative_int, positive_float, positive_int

GIB = 1 << 30


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="memory, gradient evaluations and time of a run on a device, before running it",
        description=(
            "From params.yaml (or conf/ composed with overrides) and a device: parameters (from the model "
            "config, no weights loaded), trainable parameters, peak memory per stage, gradient evaluations "
            "of the attribution stages and projected time from a measured (--measure) or stated "
            "(--sample-seconds) per-sample cost. Names the key to change when a stage does not fit."
        ),
    )
    p.add_argument(
        "overrides", nargs="*", help="Hydra overrides (compose conf/ instead of reading params.yaml)"
    )
    p.add_argument("--device", default="local", help="local (this machine) or e.g. h100-80gb, a100-40gb")
    p.add_argument("--params", default="params.yaml", help="composed config when no overrides are given")
    p.add_argument("--conf", default="conf", help="config directory for overrides (default: conf)")
    p.add_argument(
        "--measure", action="store_true", help="time a few gradient samples and training steps here"
    )
    p.add_argument(
        "--sample-seconds", type=positive_float, help="stated seconds per attribution gradient sample"
    )
    p.add_argument(
        "--train-seconds", type=positive_float, help="stated seconds per training example (forward+backward)"
    )
    p.add_argument(
        "--prompt-tokens", type=positive_int,
        help="prompt length (default: the prepared prompts of this data config, else data.max_tokens)",
    )  # fmt: skip
    p.add_argument(
        "--train-examples", type=positive_int,
        help="training examples (default: the prepared prompts of this data config / MedQA file)",
    )  # fmt: skip
    p.add_argument(
        "--questions", type=non_negative_int,
        help="explained questions; 0 = every question of the split, as attribution.max_questions=0 "
        "(default: attribution.max_questions)",
    )  # fmt: skip
    p.set_defaults(run=run)


def _gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.config import compose, load_params, validate
    from xurs_pipeline.planning.devices import resolve_device
    from xurs_pipeline.planning.estimate import Costs, Shape, plan_stages
    from xurs_pipeline.planning.shapes import backbone_config, count_parameters
    from xurs_pipeline.planning.workload import resolve_workload

    if args.overrides:
        cfg = validate(compose(args.overrides, conf_dir=args.conf), source=f"overrides {args.overrides}")
    else:
        cfg = load_params(args.params)
    device = resolve_device(args.device)
    config = backbone_config(cfg.model)
    counts = count_parameters(config, cfg.model, cfg.train)
    shape = Shape.of(config)
    work = resolve_workload(cfg, Path.cwd(), args.prompt_tokens, args.train_examples, args.questions)
    costs = Costs(gradient_sample=args.sample_seconds, train_example=args.train_seconds)
    if args.measure:
        from xurs_pipeline.planning.measure import measure_costs

        costs = measure_costs(cfg, config, work.prompt_tokens)
    print(
        f"plan: experiment {cfg.experiment_name}, {config.model_type} ({shape.layers} layers, hidden "
        f"{shape.hidden}), device {device.name} ({_gib(device.memory_bytes)}; process "
        f"{_gib(device.process_bytes)})"
    )
    print(f"parameters: {counts.total:,} (backbone {counts.backbone:,}); trainable {counts.trainable:,} "
          f"(head {counts.head:,}, {cfg.train.adaptation} {counts.adapter:,})")  # fmt: skip
    print(f"workload: {work.prompt_tokens} prompt tokens, {work.train_examples} training examples, "
          f"{work.questions} explained questions")  # fmt: skip
    if costs.gradient_sample is not None:
        train = f", {1e3 * costs.train_example:.1f} ms per training example" if costs.train_example else ""
        load = f", {costs.load_model:.1f} s to load the backbone" if costs.load_model is not None else ""
        print(f"cost: {1e3 * costs.gradient_sample:.1f} ms per gradient sample{train}{load}")
    print(f"{'stage':<18} {'peak memory':>12} {'gradients':>10} {'time':>10}  fits")
    refused = False
    for s in plan_stages(cfg, counts, shape, device, work, costs):
        fits = s.peak_bytes <= device.memory_bytes
        refused |= not fits
        verdict = "yes" if fits else f"NO: {s.advice}"
        print(
            f"{s.stage:<18} {_gib(s.peak_bytes):>12} {s.gradient_evaluations:>10,} "
            f"{_duration(s.seconds):>10}  {verdict}"
        )
    a = cfg.attribution
    if a.method == "kronrod" or (a.method == "ig" and a.ig_adaptive):
        print(f"gradients and time are ceilings: {a.method} stops where it meets its tolerance, often sooner")
    return 1 if refused else 0
