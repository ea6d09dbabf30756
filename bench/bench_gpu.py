"""GPU measurements at the paper's scale, and the paper's experiments end to end under CUDA.

    python bench/bench_gpu.py [--experiments paper_smollm3,paper_llama2] [--tokens 256,512] [--rounds 5]
                              [--sections gradients,plan,pipelines] [--json results.json]

Sections (each prints Markdown; ``--json`` also writes every number):

- ``gradients``: on a random-weight classifier of each experiment's backbone (SmolLM3-3B, Llama-2-7B: the
  cost of a gradient does not depend on the weights' values) with the LoRA adapters of Table 4 beside the
  weights (then, for the engine once more, merged into them: ``attribution.merge_lora``), in the
  experiment's attribution precision (FP16, BF16), milliseconds per gradient sample of
  ``attribution.samples_per_call`` samples per call for a bare forward+backward (the least any
  implementation must do), the engine (``attribution.gradients.accumulate``) and Captum's GradientShap on
  the same EG plan (``np.random.seed`` replays the plan inside Captum; the two attributions are compared),
  each variant timed after the previous one finished (``torch.cuda.synchronize``), medians over rounds;
  and the engine's peak GPU memory (``torch.cuda.max_memory_allocated``) for one call.
- ``plan``: ``xurs plan``'s projection (``planning.estimate.plan_stages``) for the experiment on the card
  it runs on, with costs from ``--measure`` on this GPU (``planning.measure.measure_costs``), against the
  gradient section's measurement: per-sample time and the attribute stage's peak memory.
- ``pipelines``: ``paper_smollm3`` and ``paper_llama2`` on tiny random models of their architectures, every
  stage to ``tables`` in one process (``run_pipeline``, as ``tests/paper`` runs them on the CPU), once on
  the GPU and once with CUDA hidden (``CUDA_VISIBLE_DEVICES=``), and their headline metrics side by side.

Needs a CUDA GPU for ``gradients`` and ``plan``; ``--tiny`` shrinks the backbones to two layers of width
256 so the script itself can be checked on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as C
import numpy as np
import torch

from xurs_pipeline.attribution.endpoints import prompt_of
from xurs_pipeline.attribution.gradients import accumulate
from xurs_pipeline.attribution.model import Objective
from xurs_pipeline.attribution.plan import eg_plan
from xurs_pipeline.attribution.references import prepare_training
from xurs_pipeline.config import RootConfig, compose, validate
from xurs_pipeline.credal import credal_width
from xurs_pipeline.planning.measure import attributed_classifier
from xurs_pipeline.planning.shapes import backbone_config

TARGET = 0
N_REFS = 16
GIB = 2**30


OVERRIDES: list[str] = []  # --override: extra config overrides for every experiment (e.g. a precision)


def experiment_config(experiment: str, *extra: str) -> RootConfig:
    overrides = [f"experiment={experiment}", *OVERRIDES, *extra]
    return validate(compose(overrides, conf_dir=C.ROOT / "conf"), source=" ".join(overrides))


def shrink(config: object) -> object:
    """``--tiny``: two layers of width 256 (heads and MLP scaled down), for a CPU check of the script."""
    config.num_hidden_layers, config.hidden_size, config.intermediate_size = 2, 256, 512
    config.num_attention_heads, config.num_key_value_heads = 4, 2
    if hasattr(config, "no_rope_layers"):
        config.no_rope_layers = [1, 0]
    if hasattr(config, "layer_types"):
        config.layer_types = config.layer_types[:2]
    return config


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_ms(fn, device: torch.device, rounds: int) -> list[float]:
    """Wall milliseconds of ``fn(r)`` for r = 0..rounds-1 after one warm-up call (r = -1)."""
    fn(-1)
    out = []
    for r in range(rounds):
        sync(device)
        start = time.perf_counter()
        fn(r)
        sync(device)
        out.append(1e3 * (time.perf_counter() - start))
    return out


def gradients(experiment: str, tokens: int, rounds: int, device: torch.device, tiny: bool) -> dict:
    from captum.attr import GradientShap

    cfg = experiment_config(experiment, "attribution.merge_lora=false")  # merged below, after timing
    config = backbone_config(cfg.model)
    config = shrink(config) if tiny else config
    torch.manual_seed(0)
    model = attributed_classifier(config, cfg, device)
    batch = cfg.attribution.samples_per_call
    rng = np.random.default_rng(0)
    vocab = config.vocab_size
    ids = [1, *rng.integers(3, vocab, tokens - 1).tolist()]
    ref_ids = [
        [1, *rng.integers(3, vocab, int(rng.integers(tokens // 2, tokens + 64))).tolist()]
        for _ in range(N_REFS)
    ]
    refs = prepare_training(ids, ref_ids, [f"ref{i}" for i in range(N_REFS)], 0, device)
    prompt = prompt_of(model, ids, device)
    objective = Objective.build((TARGET,), "direct")
    baselines = model.embed(refs.prepared_ids).detach()
    dtype = prompt.embeds.dtype
    attributions: dict[str, torch.Tensor] = {}

    def plan(r: int):
        return eg_plan(len(refs), batch, 1000 + r)

    def width(z: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return credal_width(model(z, mask, pos).masses.float(), validate=False)[:, TARGET]

    def bare(r: int) -> None:
        p = plan(r)
        idx = torch.as_tensor(p.ref_index, device=device)
        alpha = torch.as_tensor(p.alpha, dtype=prompt.embeds.dtype, device=device)[:, None, None]
        z = (baselines[idx] + alpha * (prompt.embeds - baselines[idx])).requires_grad_(True)
        n = z.shape[0]
        torch.autograd.grad(
            width(z, prompt.attention_mask.expand(n, -1), prompt.position_ids.expand(n, -1)).sum(), z
        )

    def engine(r: int) -> None:
        attributions[f"engine{r}"] = accumulate(model, objective, prompt, refs, plan(r), batch).e[0]

    def captum(r: int) -> None:
        np.random.seed(1000 + r)  # noqa: NPY002  GradientShap draws from numpy's global RNG
        # Captum interpolates in float32 (its alphas are): the forward casts back to the model's dtype
        attributions[f"captum{r}"] = (
            GradientShap(lambda z, m, q: width(z.to(dtype), m, q))
            .attribute(
                prompt.embeds,
                baselines=baselines,
                n_samples=batch,
                stdevs=0.0,
                additional_forward_args=(prompt.attention_mask, prompt.position_ids),
            )[0]
            .detach()
            .float()
        )

    parameters = sum(p.numel() for p in model.parameters())
    result: dict = {
        "experiment": experiment,
        "tokens": tokens,
        "samples_per_call": batch,
        "precision": cfg.attribution.precision,
        "parameters": parameters,
    }
    for name, fn in (("bare", bare), ("engine", engine), ("captum", captum)):
        result[f"{name}_ms_per_sample"] = float(np.median(time_ms(fn, device, rounds))) / batch
    ours, theirs = attributions["engine0"], attributions["captum0"]
    result["engine_vs_captum_rel_l2"] = float((ours - theirs).norm() / theirs.norm())
    if hasattr(model.backbone, "merge_and_unload"):  # unmerged LoRA: the same function, W + s B A merged
        model.backbone = model.backbone.merge_and_unload()
        result["engine_lora_merged_ms_per_sample"] = float(np.median(time_ms(engine, device, rounds))) / batch
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        engine(0)
        result["engine_peak_gib"] = torch.cuda.max_memory_allocated(device) / GIB
        result["weights_gib"] = base / GIB
    return result


def plan_vs_measured(experiment: str, tokens: int, measured: dict, device: torch.device) -> dict:
    """``xurs plan`` on this card with ``--measure`` costs, beside the gradient section's numbers."""
    from xurs_pipeline.planning.devices import DEVICES
    from xurs_pipeline.planning.estimate import Shape, Workload, plan_stages
    from xurs_pipeline.planning.measure import measure_costs
    from xurs_pipeline.planning.shapes import count_parameters

    cfg = experiment_config(experiment)
    config = backbone_config(cfg.model)
    name = "h200-141gb" if "H200" in torch.cuda.get_device_name(device) else "h100-80gb"
    costs = measure_costs(cfg, config, tokens, device=device)
    counts = count_parameters(config, cfg.model, cfg.train)
    work = Workload(prompt_tokens=tokens, train_examples=10178, questions=cfg.attribution.max_questions)
    stages = {s.stage: s for s in plan_stages(cfg, counts, Shape.of(config), DEVICES[name], work, costs)}
    attribute = stages["attribute"]
    return {
        "experiment": experiment,
        "tokens": tokens,
        "plan_device": name,
        "plan_measured_ms_per_sample": 1e3 * costs.gradient_sample,
        "engine_ms_per_sample": measured.get("engine_ms_per_sample"),
        "plan_train_ms_per_example": None if costs.train_example is None else 1e3 * costs.train_example,
        "plan_attribute_peak_gib": attribute.peak_bytes / GIB,
        "measured_engine_peak_gib": measured.get("engine_peak_gib"),
        "plan_attribute_hours": None if attribute.seconds is None else attribute.seconds / 3600,
        "plan_stages": {
            k: {
                "peak_gib": s.peak_bytes / GIB,
                "seconds": s.seconds,
                "gradient_evaluations": s.gradient_evaluations,
            }
            for k, s in stages.items()
        },
    }


def pipeline_headlines(experiment: str, work: Path) -> dict:
    """Run ``experiment`` on its tiny model in ``work`` to ``tables`` in this process; stage headlines."""
    # the sizes and tiny models tests/paper runs (xurs_pipeline/models/tiny_paper.py)
    from xurs_pipeline.cli import main as xurs
    from xurs_pipeline.config import load_params
    from xurs_pipeline.models.tiny import save_tiny_paper_model
    from xurs_pipeline.models.tiny_paper import (
        ARCHITECTURE,
        MEDQA_SIZES,
        PAPER_MODEL_LAYERS,
        sized_overrides,
        write_medqa,
    )
    from xurs_pipeline.tasks.pipeline import run_pipeline

    for name in ("conf", "stages", "xurs_pipeline"):
        shutil.copytree(C.ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(C.ROOT / "dvc.yaml", work / "dvc.yaml")
    write_medqa(work / "medqa", MEDQA_SIZES)
    arch = ARCHITECTURE[experiment]
    model_dir = save_tiny_paper_model(work / "model", arch, num_layers=PAPER_MODEL_LAYERS[arch])
    os.chdir(work)
    assert xurs(["params", *sized_overrides(experiment, model_dir)]) == 0
    start = time.perf_counter()
    headlines = run_pipeline(load_params("params.yaml"), until="tables")
    return {
        "seconds": time.perf_counter() - start,
        "cuda": torch.cuda.is_available(),
        "headlines": {k: dict(v) for k, v in headlines.items() if v},
    }


def pipelines(experiments: list[str], out: dict, save) -> dict:
    """Each experiment once here (the GPU when there is one) and once in a subprocess with CUDA hidden,
    into ``out``; ``save()`` after each run, so a run cut short keeps what finished."""
    for experiment in experiments:
        for where in ("cuda", "cpu"):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.pathsep.join([str(C.ROOT), os.environ.get("PYTHONPATH", "")])
                env = {**os.environ, "PYTHONPATH": path}
                if where == "cpu":
                    env["CUDA_VISIBLE_DEVICES"] = ""
                code = (
                    f"import sys, json; sys.path.insert(0, {str(C.ROOT / 'bench')!r}); import bench_gpu; "
                    f"print('JSON' + json.dumps(bench_gpu.pipeline_headlines({experiment!r}, "
                    f"__import__('pathlib').Path({tmp!r}))))"
                )
                proc = subprocess.run(
                    [sys.executable, "-c", code],
                    env=env,
                    capture_output=True,
                    text=True,
                    cwd=C.ROOT,
                    check=False,
                )
                line = next((x for x in proc.stdout.splitlines() if x.startswith("JSON")), None)
                out[f"{experiment}/{where}"] = (
                    json.loads(line[4:]) if line else {"error": proc.stderr[-2000:]}
                )
                print(f"{experiment} on {where}: {'ok' if line else 'FAILED'}", flush=True)
                save()
    return out


def render(files: list[Path]) -> str:
    """Markdown tables from the ``--json`` files of earlier runs (what BENCHMARKS.md shows)."""
    runs = [json.loads(f.read_text()) for f in files]
    grads = [g for r in runs for g in r.get("gradients", [])]
    rows = [
        [
            g["experiment"],
            g["precision"],
            g["tokens"],
            g["samples_per_call"],
            f"{g['bare_ms_per_sample']:.1f}",
            f"{g['engine_ms_per_sample']:.1f}",
            f"{g['captum_ms_per_sample']:.1f}",
            f"{g['engine_ms_per_sample'] / g['captum_ms_per_sample']:.2f}",
            f"{g['engine_lora_merged_ms_per_sample']:.1f}"
            if "engine_lora_merged_ms_per_sample" in g
            else "-",
            f"{g['engine_ms_per_sample'] / g['engine_lora_merged_ms_per_sample']:.2f}"
            if "engine_lora_merged_ms_per_sample" in g
            else "-",
            f"{g['engine_vs_captum_rel_l2']:.1e}",
            f"{g.get('engine_peak_gib', float('nan')):.1f}",
        ]
        for g in grads
    ]
    out = (
        []
        if not rows
        else [
            C.markdown_table(
                [
                    "experiment",
                    "precision",
                    "tokens",
                    "per call",
                    "bare ms",
                    "engine ms",
                    "captum ms",
                    "engine / captum",
                    "engine, LoRA merged ms",
                    "unmerged / merged",
                    "engine vs captum (rel. L2)",
                    "engine peak GiB",
                ],
                rows,
            )
        ]
    )
    for r in runs:
        for q in r.get("plan", []):
            out.append(
                f"\n`xurs plan` for {q['experiment']} at {q['tokens']} tokens on {q['plan_device']}: "
                f"measured {q['plan_measured_ms_per_sample']:.1f} ms per gradient sample (engine in the "
                f"gradients run: {q['engine_ms_per_sample']:.1f}), attribute stage peak "
                f"{q['plan_attribute_peak_gib']:.1f} GiB planned vs {q['measured_engine_peak_gib']:.1f} GiB "
                "allocated by the engine."
            )
        pipes = r.get("pipelines", {})
        names = sorted({k.split("/")[0] for k in pipes})
        prow = []
        for name in names:
            for where in ("cuda", "cpu"):
                h = pipes.get(f"{name}/{where}", {}).get("headlines")
                if not h:
                    prow.append([name, where, "failed", "", "", "", ""])
                    continue
                prow.append(
                    [
                        name,
                        where,
                        f"{pipes[f'{name}/{where}']['seconds']:.1f}",
                        h["predict"]["accuracy"],
                        f"{h['attribute']['R_max']:.5f}",
                        f"{h['mask_eval']['advantage']:.6f}",
                        f"{h['checks']['checks'] - h['checks']['checks_failed']}/{h['checks']['checks']}",
                    ]
                )
        if prow:
            out.append(
                "\n"
                + C.markdown_table(
                    [
                        "experiment (tiny model)",
                        "device",
                        "seconds",
                        "accuracy",
                        "R_max",
                        "Table 1 advantage",
                        "checks passed",
                    ],
                    prow,
                )
            )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--experiments", default="paper_smollm3,paper_llama2")
    parser.add_argument("--tokens", default="256,512")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sections", default="gradients,plan,pipelines")
    parser.add_argument("--tiny", action="store_true", help="two-layer backbones (a CPU check of the script)")
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument("--override", action="append", default=[], help="a config override (repeatable)")
    parser.add_argument(
        "--render", type=Path, nargs="+", help="print the tables of earlier --json files, run nothing"
    )
    args = parser.parse_args()
    if args.render:
        print(render(args.render))
        return
    OVERRIDES.extend(args.override)
    started = time.perf_counter()
    C.print_header("GPU measurements at the paper's scale", " ".join(["python", *sys.argv]))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    facts = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    import transformers

    facts["transformers"] = transformers.__version__
    print("facts:", json.dumps(facts), flush=True)
    results: dict = {"facts": facts, "gradients": [], "plan": [], "pipelines": {}}
    sections = args.sections.split(",")
    experiments, tokens = args.experiments.split(","), [int(t) for t in args.tokens.split(",")]

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, default=str))

    for experiment in experiments:
        for t in tokens:
            measured: dict = {}
            if "gradients" in sections:
                measured = gradients(experiment, t, args.rounds, device, args.tiny)
                if device.type == "cuda":
                    torch.cuda.empty_cache()  # the model of the call above is gone: give its blocks back
                results["gradients"].append(measured)
                print("gradients:", json.dumps(measured), flush=True)
                save()
            if "plan" in sections and device.type == "cuda" and t == tokens[0]:
                planned = plan_vs_measured(experiment, t, measured, device)
                results["plan"].append(planned)
                print("plan:", json.dumps(planned, default=str), flush=True)
                save()
    if "pipelines" in sections:
        pipelines(experiments, results["pipelines"], save)
        print("pipelines:", json.dumps(results["pipelines"], default=str)[:4000], flush=True)
        save()
    C.print_footer(started)


if __name__ == "__main__":
    main()
