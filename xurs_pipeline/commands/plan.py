"""``xurs plan``: memory, gradient evaluations and time of a run on a device, before running it.

From params.yaml (or conf/ composed with overrides) and a device: parameters (from the model config, no
weights loaded), trainable parameters, peak memory per stage, gradient evaluations of the attribution stages
and projected time from a measured (--measure) or stated (--sample-seconds) per-sample cost. Names the key
to change when a stage does not fit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xurs_pipeline.config import RootConfig
    from xurs_pipeline.train.config import TrainConfig

from xurs_pipeline.commands.args import command, non_negative_int, positive_float, positive_int

GIB = 1 << 30


def add_parser(sub: argparse._SubParsersAction) -> None:
    overrides = ("*", "Hydra overrides (compose conf/ instead of reading params.yaml)")
    p = command(sub, __doc__, run, "composed config when no overrides are given", overrides=overrides)
    p.add_argument("--device", default="local", help="local (this machine) or e.g. h100-80gb, a100-40gb")
    p.add_argument(
        "--measure",
        action="store_true",
        help="time a few gradient samples and training steps on this machine: on its GPU when --device is a "
        "GPU and this machine has one, else on its CPU",
    )
    p.add_argument(
        "--sample-seconds", type=positive_float, help="stated seconds per attribution gradient sample"
    )
    p.add_argument(
        "--train-seconds", type=positive_float, help="stated seconds per training example (forward+backward)"
    )
    _add_workload(p)
    p.add_argument(
        "--processes",
        type=positive_int,
        default=1,
        help="processes of a torchrun / accelerate launch, one device each (default 1: dvc repro); training "
        "splits each optimiser step over them (train.global_batch = batch_size x processes x accumulation), "
        "attribution splits the questions",
    )


def _add_workload(p: argparse.ArgumentParser) -> None:
    """The options that state the workload in place of what the data config and prepared prompts say."""
    p.add_argument(
        "--prompt-tokens",
        type=positive_int,
        help="prompt length (default: the prepared prompts of this data config, else data.max_tokens)",
    )
    p.add_argument(
        "--train-examples",
        type=positive_int,
        help="training examples (default: the prepared prompts of this data config / MedQA file)",
    )
    p.add_argument(
        "--questions",
        type=non_negative_int,
        help="explained questions; 0 = every question of the split, as attribution.max_questions=0 "
        "(default: attribution.max_questions)",
    )


def _gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _print_processes(t: TrainConfig, processes: int) -> bool:
    """Print how ``processes`` split training's global batch; False (naming the key) where they cannot."""
    from xurs_pipeline.train.config import accumulation_steps

    try:
        steps = accumulation_steps(t.global_batch, t.batch_size, processes)
    except ValueError as err:
        print(f"processes: {processes}; NO: {err}")
        return False
    print(
        f"processes: {processes}; training's global batch {t.global_batch} = {t.batch_size} per process x "
        f"{processes} x {steps} accumulation steps (times: the busiest process's share)"
    )
    return True


def _costs(args: argparse.Namespace, cfg: Any, config: Any, prompt_tokens: int, kind: str) -> Any:
    """The per-sample costs: measured here with --measure (on the device of ``kind`` when this machine
    has one), else the stated --sample-seconds / --train-seconds."""
    from xurs_pipeline.planning.estimate import Costs

    if not args.measure:
        return Costs(gradient_sample=args.sample_seconds, train_example=args.train_seconds)
    from xurs_pipeline.planning.measure import describe_device, measure_costs, measurement_device

    where = measurement_device(kind)
    costs = measure_costs(cfg, config, prompt_tokens, device=where)
    print(f"measured on {describe_device(where)}")
    return costs


# The forward-only attribution methods (attribution/methods/perturbation.py) and their forwards per question,
# L the question's tokens: the plan counts gradients, so it states these instead of 0 gradients and 0 memory.
FORWARDS = {
    "occlusion_token": "L + 1",
    "occlusion_span": "L / span_tokens + 1",
    "shapley_span": "2^spans, <= 2^12",
}


def _print_stages(stages: Any, memory_bytes: int) -> bool:
    """Print each stage's peak memory, gradient evaluations, time and whether it fits; True if all fit."""
    print(f"{'stage':<18} {'peak memory':>12} {'gradients':>10} {'time':>10}  fits")
    every = True
    for s in stages:
        fits = s.peak_bytes <= memory_bytes
        every &= fits
        verdict = "yes" if fits else f"NO: {s.advice}"
        print(
            f"{s.stage:<18} {_gib(s.peak_bytes):>12} {s.gradient_evaluations:>10,} "
            f"{_duration(s.seconds):>10}  {verdict}"
        )
    return every


def _config(args: argparse.Namespace) -> RootConfig:
    """conf/ composed with the overrides, or params.yaml when there are none."""
    from xurs_pipeline.config import compose, load_params, validate

    if not args.overrides:
        return load_params(args.params)
    return validate(compose(args.overrides, conf_dir=args.conf), source=f"overrides {args.overrides}")


def _print_costs(costs: Any) -> None:
    """Print the per-sample costs the times are projected from (nothing when none is known)."""
    if costs.gradient_sample is None:
        return
    train = f", {1e3 * costs.train_example:.1f} ms per training example" if costs.train_example else ""
    load = f", {costs.load_model:.1f} s to load the backbone" if costs.load_model is not None else ""
    print(f"cost: {1e3 * costs.gradient_sample:.1f} ms per gradient sample{train}{load}")


def _print_method_notes(cfg: RootConfig) -> None:
    """Say where the plan is a ceiling (methods that stop at their tolerance) and which configured methods
    run forwards only, so that their memory and time are not planned."""
    a = cfg.attribution
    if a.method in ("kronrod", "certified") or (a.method == "ig" and a.ig_adaptive):
        print(f"gradients and time are ceilings: {a.method} stops where it meets its tolerance, often sooner")
    compared = [(f"evaluation.compare_methods entry {m}", m) for m in cfg.evaluation.compare_methods]
    for named, method in [(f"attribution.method={a.method}", a.method), *compared]:
        if method in FORWARDS:
            print(
                f"{named} runs forwards only ({FORWARDS[method]} per question, batched), no "
                "gradients: its memory and time are not planned above"
            )


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.planning.devices import resolve_device
    from xurs_pipeline.planning.estimate import Shape, plan_stages
    from xurs_pipeline.planning.shapes import backbone_config, count_parameters
    from xurs_pipeline.planning.workload import resolve_workload

    if args.processes < 1:
        print(f"xurs plan: --processes {args.processes}: must be at least 1", file=sys.stderr)
        return 2
    cfg = _config(args)
    device = resolve_device(args.device)
    config = backbone_config(cfg.model)
    counts = count_parameters(config, cfg.model, cfg.train)
    shape = Shape.of(config)
    work = resolve_workload(cfg, Path.cwd(), args.prompt_tokens, args.train_examples, args.questions)
    costs = _costs(args, cfg, config, work.prompt_tokens, device.kind)
    print(
        f"plan: experiment {cfg.experiment_name}, {config.model_type} ({shape.layers} layers, hidden "
        f"{shape.hidden}), device {device.name} ({_gib(device.memory_bytes)}; process "
        f"{_gib(device.process_bytes)})"
    )
    print(
        f"parameters: {counts.total:,} (backbone {counts.backbone:,}); trainable {counts.trainable:,} "
        f"(head {counts.head:,}, {cfg.train.adaptation} {counts.adapter:,})"
    )
    print(
        f"workload: {work.prompt_tokens} prompt tokens, {work.train_examples} training examples, "
        f"{work.questions} explained questions"
    )
    _print_costs(costs)
    refused = not _print_processes(cfg.train, args.processes)
    refused |= not _print_stages(
        plan_stages(cfg, counts, shape, device, work, costs, args.processes), device.memory_bytes
    )
    _print_method_notes(cfg)
    return 1 if refused else 0
