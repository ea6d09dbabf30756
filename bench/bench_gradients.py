"""Benchmark 1: EG engine vs Captum GradientShap vs a bare batched forward+backward, and the roofline.

    /work/venv/bin/python bench/bench_gradients.py [--quick] [--models tiny,smollm2]

Same model, input, references, alphas and batch for every variant: each round r draws one EG plan of
``batch`` samples with seed 1000 + r (``eg_plan``), which ``np.random.seed(1000 + r)`` replays inside
Captum's GradientShap (same reference indices and alphas, checked numerically on round 0). Variants:

- bare: one forward and one ``torch.autograd.grad`` w.r.t. the interpolated embeddings, weights frozen
  (the least work any implementation must do);
- engine: ``attribution.gradients.accumulate`` on that plan (bare + weighting and float32 accumulation);
- captum: ``GradientShap(width).attribute(x, baselines, n_samples=batch, stdevs=0)``, weights frozen;
- captum, weights require grad: the same on a model whose parameters still require grad (how a model
  comes out of ``from_pretrained``);
- bare + weight grads: ``loss.backward()`` on a model whose weights require grad (what a training step,
  or attribution code that calls ``.backward()``, pays);
- four targets (tiny model): the engine explaining all four options' widths (one forward, four
  backward passes) vs four Captum calls.
- paired reference (a section of its own; ``--paired-only`` runs just it): an aligned reference that
  differs from the prompt at 3 tokens from 75% (or 50%) of its length, engine with the shared prefix
  run once (``attribution.reuse_prefix``) vs the engine at full length vs Captum, on the same plans.

Timing: the machine is shared, so ratios come from adjacent pairs of calls (a then b, or b then a on
alternate rounds): each variant is timed right next to the variant it is compared with, and the table
reports the median over rounds of the pair's time ratio (wall clock, and process CPU time).

Roofline: a float32 GEMM (``torch.matmul`` 2048^3, three times) is paired with the bare pass, so the bare
pass's achieved FLOP/s (``bench/_flops.py``'s count / wall time) is compared with the GEMM rate under the
same load; other variants' fractions follow from their ratio to the bare pass.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import _common as C
import numpy as np
import torch
from _flops import ArchSpec, gradient_sample_flops
from captum.attr import GradientShap

from xurs_pipeline.attribution.endpoints import prompt_of
from xurs_pipeline.attribution.gradients import Batching, accumulate
from xurs_pipeline.attribution.model import Objective, Prompt
from xurs_pipeline.attribution.plan import SamplingPlan, eg_plan
from xurs_pipeline.attribution.references import PreparedReferences, prepare_aligned, prepare_training
from xurs_pipeline.credal import credal_width
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead, build_classifier

CPU = torch.device("cpu")
TARGET = 0


@dataclass
class Setup:
    name: str
    model: RandomSetClassifier
    spec: ArchSpec
    prompt: Prompt
    refs: PreparedReferences
    pad_id: int


def tiny_model() -> tuple[RandomSetClassifier, int]:
    """6-layer 512-wide Llama (8 heads, MLP 1024 = build_tiny_llama's 2 x hidden), belief14 head."""
    from xurs_pipeline.models.tiny import build_tiny_llama

    llama = build_tiny_llama(512, hidden_size=512, num_layers=6, num_heads=8, seed=0)
    return RandomSetClassifier(llama.model, RandomSetHead(512, seed=0)), 0


def smollm2_model() -> tuple[RandomSetClassifier, int]:
    """SmolLM2-135M-Instruct (GGUF dequantised to float32, saved once under .cache/), belief14 head."""
    from xurs_pipeline.models.backbone import BACKBONE_INFO, load_backbone_dir, materialize_backbone

    directory = C.BENCH_CACHE / "smollm2_backbone"
    if not (directory / BACKBONE_INFO).is_file():
        materialize_backbone(directory, "gguf", C.SMOLLM2_GGUF, pad_token="<|im_end|>")
    backbone = load_backbone_dir(directory)
    return build_classifier(backbone, seed=0), int(backbone.tokenizer.pad_token_id)


def make_setup(name: str, tokens: int, n_refs: int) -> Setup:
    model, pad_id = tiny_model() if name == "tiny" else smollm2_model()
    model.eval().requires_grad_(False)
    vocab = model.backbone.config.vocab_size
    rng = np.random.default_rng(0)
    ids = [1, *rng.integers(3, vocab, tokens - 1).tolist()]
    ref_ids = [
        [1, *rng.integers(3, vocab, int(rng.integers(tokens // 2, tokens + 64))).tolist()]
        for _ in range(n_refs)
    ]
    refs = prepare_training(ids, ref_ids, [f"ref{i}" for i in range(n_refs)], pad_id, CPU)
    spec = ArchSpec.from_config(name, model.backbone.config)
    return Setup(name, model, spec, prompt_of(model, ids, CPU), refs, pad_id)


def _interpolate(s: Setup, plan: SamplingPlan) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        idx = torch.as_tensor(plan.ref_index)
        base = s.refs.embeds(s.model.embed, idx, s.prompt.embeds)
        alpha = torch.as_tensor(plan.alpha, dtype=torch.float32)[:, None, None]
        z = base + alpha * (s.prompt.embeds - base)
    return z.requires_grad_(True), base


def _width(s: Setup, z: torch.Tensor) -> torch.Tensor:
    n = z.shape[0]
    mask, pos = s.prompt.attention_mask.expand(n, -1), s.prompt.position_ids.expand(n, -1)
    return credal_width(s.model(z, mask, pos).masses, validate=False)[:, TARGET]


def variants(s: Setup, batch: int, results: dict[str, torch.Tensor]) -> dict[str, Callable[[int], object]]:
    objective = Objective.build((TARGET,), "direct")
    baselines = s.model.embed(s.refs.prepared_ids).detach()  # (M, L, d)

    def plan(r: int) -> SamplingPlan:
        return eg_plan(len(s.refs), batch, 1000 + r)

    def bare(r: int) -> None:
        z, _ = _interpolate(s, plan(r))
        torch.autograd.grad(_width(s, z).sum(), z)

    def engine(r: int) -> None:
        results[f"engine{r}"] = accumulate(s.model, objective, s.prompt, s.refs, plan(r), batch).e[0]

    def captum(r: int, weights_grad: bool = False, target: int = TARGET) -> None:
        s.model.requires_grad_(weights_grad)
        np.random.seed(1000 + r)  # noqa: NPY002  GradientShap draws from numpy's global RNG
        out = GradientShap(lambda z, m, p: credal_width(s.model(z, m, p).masses, validate=False)[:, target])
        results[f"captum{r}t{target}w{int(weights_grad)}"] = out.attribute(
            s.prompt.embeds,
            baselines=baselines,
            n_samples=batch,
            stdevs=0.0,
            additional_forward_args=(s.prompt.attention_mask, s.prompt.position_ids),
        )[0].detach()
        s.model.requires_grad_(False)

    def bare_weight_grads(r: int) -> None:
        s.model.requires_grad_(True)
        z, _ = _interpolate(s, plan(r))
        _width(s, z).sum().backward()
        s.model.zero_grad(set_to_none=True)
        s.model.requires_grad_(False)

    chosen: dict[str, Callable[[int], object]] = {
        "bare fwd+bwd (weights frozen)": bare,
        "engine (accumulate)": engine,
        "captum GradientShap (weights frozen)": captum,
        "captum GradientShap (weights require grad)": lambda r: captum(r, True),
    }
    if s.name == "tiny":
        chosen["bare + weight grads (.backward())"] = bare_weight_grads
        all_targets = Objective.build((0, 1, 2, 3), "direct")
        chosen["engine, 4 targets (1 forward, 4 backward)"] = lambda r: accumulate(
            s.model, all_targets, s.prompt, s.refs, plan(r), batch
        )
        chosen["captum, 4 targets (4 calls)"] = lambda r: [captum(r, target=t) for t in range(4)]
    return chosen


def saved_bytes_per_batch(s: Setup, batch: int, weights_grad: bool = False) -> int:
    """Bytes autograd keeps for one bare batch (distinct storages, weights excluded)."""
    weights = {p.untyped_storage().data_ptr() for p in s.model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in weights:
            saved[ptr] = max(saved.get(ptr, 0), t.untyped_storage().nbytes())
        return t

    s.model.requires_grad_(weights_grad)
    z, _ = _interpolate(s, eg_plan(len(s.refs), batch, 0))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        _width(s, z)
    s.model.requires_grad_(False)
    return sum(saved.values())


def profile_engine(s: Setup, batch: int) -> str:
    """Share of self CPU time by operator over two engine batches (torch.profiler)."""
    from torch.profiler import profile

    objective = Objective.build((TARGET,), "direct")
    with profile() as prof:
        for r in range(2):
            accumulate(s.model, objective, s.prompt, s.refs, eg_plan(len(s.refs), batch, r), batch)
    ops = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in ops)
    gemm = sum(e.self_cpu_time_total for e in ops if e.key in ("aten::mm", "aten::bmm", "aten::addmm"))
    rows = [[e.key[:60], e.count, e.self_cpu_time_total / total] for e in ops[:10]]
    return (
        f"torch.profiler, engine, 2 batches: GEMM (mm/bmm/addmm) {gemm / total:.0%} of self CPU time\n\n"
        + C.markdown_table(["operator", "calls", "share of self CPU time"], rows)
        + "\n"
    )


def flop_check(s: Setup, tokens: int) -> str:
    """torch.utils.flop_counter's GEMM count for one sample vs the formula's 2 P T per direction."""
    from torch.utils.flop_counter import FlopCounterMode

    z, _ = _interpolate(s, eg_plan(len(s.refs), 1, 0))
    with FlopCounterMode(display=False) as counter:
        out = _width(s, z).sum()
        forward = counter.get_total_flops()
        out.backward()  # weights are frozen: the same GEMMs as autograd.grad w.r.t. z
    backward = counter.get_total_flops() - forward
    gemm = 2.0 * s.spec.matmul_params() * tokens
    for counted in (forward, backward):
        assert abs(counted - gemm) <= 1e-3 * gemm, (
            f"{s.name}: torch counts {counted:.4e} GEMM FLOPs, formula {gemm:.4e}"
        )
    return (
        f"Check: torch.utils.flop_counter counts {forward / 1e9:.3f} G GEMM FLOPs forward and "
        f"{backward / 1e9:.3f} G backward for one sample = 2 P T = {gemm / 1e9:.3f} G each (no "
        "weight-gradient GEMMs; it does not count the CPU flash-attention kernel, which the formula adds)."
    )


GEMM = "fp32 GEMM, torch.matmul 2048^3 x 3"
GEMM_SIZE, GEMM_REPEATS = 2048, 3


def gemm_variant() -> Callable[[int], object]:
    a, b = torch.randn(GEMM_SIZE, GEMM_SIZE), torch.randn(GEMM_SIZE, GEMM_SIZE)
    return lambda r: [torch.matmul(a, b) for _ in range(GEMM_REPEATS)]


BARE, ENGINE = "bare fwd+bwd (weights frozen)", "engine (accumulate)"
CAPTUM, CAPTUM_RG = "captum GradientShap (weights frozen)", "captum GradientShap (weights require grad)"
WEIGHT_GRADS = "bare + weight grads (.backward())"
ENGINE4, CAPTUM4 = "engine, 4 targets (1 forward, 4 backward)", "captum, 4 targets (4 calls)"


def pairs_for(name: str) -> list[tuple[str, str]]:
    """Adjacent pairs (a, b) whose time ratio b / a is measured; SmolLM2 keeps the essential ones."""
    pairs = [(GEMM, BARE), (BARE, ENGINE), (BARE, CAPTUM), (ENGINE, CAPTUM)]
    if name == "tiny":
        pairs += [(BARE, CAPTUM_RG), (BARE, WEIGHT_GRADS), (ENGINE4, CAPTUM4)]
    return pairs


def run_model(name: str, tokens: int, batch: int, rounds: int, prof: bool = False) -> list[str]:
    start = time.perf_counter()
    s = make_setup(name, tokens, n_refs=16)
    setup_s = time.perf_counter() - start
    results: dict[str, torch.Tensor] = {}
    pairs = pairs_for(name)
    used = {v for p in pairs for v in p}
    fns = {k: f for k, f in {GEMM: gemm_variant(), **variants(s, batch, results)}.items() if k in used}
    wall, ratios = C.paired(fns, pairs, rounds)
    nonfinite = sorted(k for k, v in results.items() if not bool(v.isfinite().all()))
    first = next(r for r in range(rounds) if {f"engine{r}", f"captum{r}t0w0"}.isdisjoint(nonfinite))
    ours, theirs = results[f"engine{first}"], results[f"captum{first}t0w0"]
    agreement = float((ours - theirs).norm() / theirs.norm())
    assert agreement < 1e-4, (
        f"{name}: engine and Captum differ on the same plan (relative L2 {agreement:.2e})"
    )
    flops = gradient_sample_flops(s.spec, tokens)
    gemm_flops = GEMM_REPEATS * 2 * GEMM_SIZE**3
    gemm_rate = gemm_flops / np.asarray(wall[GEMM])
    bare_fraction = float(np.median(flops.total * batch / gemm_flops / np.asarray(ratios[(GEMM, BARE)][0])))
    rows = []
    for v in fns:
        if v == GEMM:
            continue
        per_sample = float(np.median(wall[v])) / batch
        vs_bare = [float(np.median(ratios[(BARE, v)][i])) for i in (0, 1)] if (BARE, v) in ratios else None
        if v == BARE:
            vs_bare = [1.0, 1.0]
        fraction = bare_fraction / vs_bare[0] if vs_bare and v not in (ENGINE4, CAPTUM4) else float("nan")
        rate = flops.total / per_sample / 1e9 if v not in (ENGINE4, CAPTUM4) else "-"
        ratio_cells = vs_bare if vs_bare else ["-", "-"]
        rows.append(
            [v, 1e3 * per_sample, C.spread(1e3 * np.asarray(wall[v]) / batch), *ratio_cells, rate, fraction]
        )
    pair_rows = [
        [a, b, float(np.median(w)), float(np.median(c)), C.spread(w)] for (a, b), (w, c) in ratios.items()
    ]
    saved, saved_rg = saved_bytes_per_batch(s, batch), saved_bytes_per_batch(s, batch, True)
    return [
        f"## {name}: {s.spec.layers} layers, hidden {s.spec.hidden}, MLP {s.spec.intermediate}, "
        f"{s.spec.heads} heads ({s.spec.kv_heads} kv), {tokens} tokens, batch {batch}, "
        f"{len(s.refs)} references, {rounds} rounds of adjacent pairs (+1 warm-up call each), setup "
        f"{setup_s:.0f} s\n",
        f"FLOPs per gradient sample: forward {flops.forward / 1e9:.2f} G + backward to activations "
        f"{flops.backward / 1e9:.2f} G = {flops.total / 1e9:.2f} GFLOP "
        f"(P = {s.spec.matmul_params() / 1e6:.1f} M matmul weights: 4 P T + 12 layers T^2 h hd). "
        f"fp32 GEMM rate during the run: median {np.median(gemm_rate) / 1e9:.0f} GFLOP/s "
        f"({C.spread(gemm_rate / 1e9)}). {flop_check(s, tokens)}\n",
        C.markdown_table(
            [
                "variant",
                "ms / sample (median)",
                "ms / sample (min..max)",
                "x bare (wall)",
                "x bare (CPU time)",
                "achieved GFLOP/s",
                "fraction of GEMM rate",
            ],
            rows,
        ),
        "\nEvery measured pair (median over rounds of time(b) / time(a); a and b run back to back):\n",
        C.markdown_table(
            ["a", "b", "b / a (wall)", "b / a (CPU time)", "b / a per round (min..max)"], pair_rows
        ),
        f"\nEngine vs Captum attributions on round {first}: relative L2 difference {agreement:.1e}. "
        f"Non-finite results: {nonfinite or 'none'}.",
        f"Saved activations for backward, one batch of {batch}: {saved / 2**20:.0f} MiB with frozen weights, "
        f"{saved_rg / 2**20:.0f} MiB when the weights require grad (autograd keeps each linear layer's "
        f"input for a weight gradient that torch.autograd.grad then never computes). Captum's GradientShap "
        f"runs all n_samples in ONE batch (NoiseTunnel without nt_samples_batch_size): n_samples=512 "
        f"would hold {saved / batch * 512 / 2**30:.1f} GiB.\n",
        profile_engine(s, batch) if prof else "",
    ]


# Paired-reference section: an aligned reference (Sec. 5.4) that differs from the prompt at a few
# positions only, so every sample shares the prompt before them and the engine runs that prefix once
# (``attribution.reuse_prefix``, ``attribution/prefix.py``).

PAIRED_AT = (0.75, 0.5)  # where the reference differs from the prompt, as a fraction of its length
PAIRED_CHANGED = 3  # tokens replaced there
REUSE, FULL, CAPTUM_PAIRED = "engine, prefix reused", "engine, full length", "captum GradientShap"


def paired_reference(ids: list[int], at: float, vocab: int, pad_id: int) -> PreparedReferences:
    """The aligned paired reference of ``ids`` with PAIRED_CHANGED tokens replaced from ``at`` x L on."""
    start = int(at * len(ids))
    paired = list(ids)
    for i in range(start, start + PAIRED_CHANGED):
        paired[i] = 3 + (ids[i] - 3 + 1) % (vocab - 3)
    return prepare_aligned(ids, paired, "paired", pad_id, CPU)


def run_paired(name: str, tokens: int, batch: int, rounds: int) -> list[str]:
    """Engine with and without prefix reuse, and Captum, on the same one-reference EG plans."""
    model, pad_id = tiny_model() if name == "tiny" else smollm2_model()
    model.eval().requires_grad_(False)
    vocab = model.backbone.config.vocab_size
    ids = [1, *np.random.default_rng(1).integers(3, vocab, tokens - 1).tolist()]
    prompt = prompt_of(model, ids, CPU)
    objective = Objective.build((TARGET,), "direct")
    extra = (prompt.attention_mask, prompt.position_ids)
    rows, results = [], {}
    for at in PAIRED_AT:
        refs = paired_reference(ids, at, vocab, pad_id)
        baselines = model.embed(refs.prepared_ids).detach()  # (1, L, d)
        tag = f" ({at:.0%})"

        def engine(r: int, reuse: bool, refs: PreparedReferences = refs, tag: str = tag) -> None:
            plan = eg_plan(1, batch, 1000 + r)
            sums = accumulate(model, objective, prompt, refs, plan, batch, Batching(reuse_prefix=reuse))
            results[f"{reuse}{tag}{r}"] = sums

        def captum(r: int, baselines: torch.Tensor = baselines, tag: str = tag) -> None:
            np.random.seed(1000 + r)  # noqa: NPY002  GradientShap draws from numpy's global RNG
            out = GradientShap(lambda z, m, p: credal_width(model(z, m, p).masses, validate=False)[:, TARGET])
            results[f"captum{tag}{r}"] = out.attribute(
                prompt.embeds, baselines=baselines, n_samples=batch, stdevs=0.0, additional_forward_args=extra
            )[0].detach()

        fns: dict[str, Callable[[int], object]] = {
            REUSE + tag: lambda r, f=engine: f(r, True),
            FULL + tag: lambda r, f=engine: f(r, False),
            CAPTUM_PAIRED + tag: captum,
        }
        pairs = [(REUSE + tag, FULL + tag), (REUSE + tag, CAPTUM_PAIRED + tag)]
        wall, ratios = C.paired(fns, pairs, rounds)
        fast, full, theirs = results[f"True{tag}0"], results[f"False{tag}0"], results[f"captum{tag}0"]
        assert (full.prefix, fast.prefix) == (0, refs.changed_positions[0][0]), "prefix not reused"
        assert fast.e[0, : fast.prefix].abs().max() == 0, "prefix rows must be exactly 0"
        vs_full = float((fast.e[0] - full.e[0]).norm() / full.e[0].norm())
        vs_captum = float((fast.e[0] - theirs).norm() / theirs.norm())
        assert vs_full < 1e-5, f"{name}{tag}: prefix reuse vs full length, relative L2 {vs_full:.1e}"
        assert vs_captum < 1e-4, f"{name}{tag}: prefix reuse vs Captum, relative L2 {vs_captum:.1e}"
        rows.append(
            [
                f"{fast.prefix} of {tokens}",
                *[1e3 * float(np.median(wall[v + tag])) / batch for v in (REUSE, FULL, CAPTUM_PAIRED)],
                *[float(np.median(ratios[pair][i])) for pair in pairs for i in (0, 1)],
                " / ".join(C.spread(ratios[pair][0]) for pair in pairs),
                f"{vs_full:.1e} / {vs_captum:.1e}",
            ]
        )
    headers = [
        "shared prefix p",
        "ms / sample, reused",
        "ms / sample, full",
        "ms / sample, captum",
        "full / reused (wall)",
        "full / reused (CPU)",
        "captum / reused (wall)",
        "captum / reused (CPU)",
        "per round (min..max): full, captum",
        "rel. L2 vs full / vs captum",
    ]
    return [
        f"## {name}, aligned paired reference: {PAIRED_CHANGED} tokens changed at {tokens} x "
        f"{' or '.join(f'{a:.0%}' for a in PAIRED_AT)}, batch {batch}, {rounds} rounds of adjacent pairs\n",
        C.markdown_table(headers, rows),
        "\nEvery sample shares the prompt before the changed tokens: the prefix is run once per plan "
        "(batch 1, no gradient) and each batch runs only the suffix from its key/value cache.\n",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="2 rounds per model instead of 6 / 3")
    parser.add_argument("--models", default="tiny,smollm2")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--profile", action="store_true", help="also print torch.profiler operator shares")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    parser.add_argument("--paired-only", action="store_true", help="only the paired-reference section")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    C.print_header(
        "Benchmark 1: gradient samples (engine vs Captum vs bare)",
        "bench/bench_gradients.py"
        + (" --quick" if args.quick else "")
        + (f" --threads {args.threads}" if args.threads else "")
        + (" --paired-only" if args.paired_only else ""),
    )
    for name in args.models.split(","):
        rounds = 2 if args.quick else {"tiny": 6, "smollm2": 3}[name]
        if not args.paired_only:
            print("\n".join(run_model(name, args.tokens, args.batch, rounds, args.profile)), flush=True)
        print("\n".join(run_paired(name, args.tokens, args.batch, rounds)), flush=True)
    C.print_footer(started)


if __name__ == "__main__":
    main()
