"""Issue 18: half-precision passes, zero-masking from the prompt's key/value cache, the cheapest estimator
to App. B.4's tolerances, and MedQA throughput, on SmolLM2-135M with real MedQA prompts.

    python bench/bench_speed.py --section mask|precision|estimator|medqa [--questions N] [--rounds N]

Model: SmolLM2-135M-Instruct (GGUF, dequantised once under .cache/) with a random belief14 head (seed 0);
prompts: the MedQA test questions prepared with its tokenizer (``prepare_dataset``, cached under .cache/).
Every section times the compared variants side by side on the same question (order alternating) and
prints the load average at start and end.

- ``mask``: ``zero_masking_effects`` with the local evaluation settings (20 random draws, top-k to 5, 16
  prompts per pass: 106 passes per question), full length vs from the prompt's cache, float32 vs bfloat16
  backbone; max |difference| of the masses' D values against the float32 full path.
- ``precision``: ``attribution.gradients.accumulate`` (EG, 16 samples on 16 training references, 8 per
  call) in float32 and bfloat16 on prompts of 240-272 tokens, with relative L2 of e, top-10 token
  agreement and the completeness residual of each; achieved FLOP/s (``bench/_flops.py``) against the
  fp32 and bf16 GEMM rates (``torch.matmul`` 1024^3) timed next to them.
- ``estimator``: per-question median / max completeness residual R (Eq. 9) and gradient evaluations of
  EG at 16 / 64 samples and IG (Gauss-Legendre per reference, fixed or adaptive) against the same 16
  training references, in the chosen precision; App. B.4 asks median R <= 0.01 and max R <= 0.05.
- ``medqa``: questions per hour of the MedQA path (attribution with ``conf/attribution/local.yaml`` as
  composed + zero-masking with ``conf/evaluation/local.yaml``) against today's (EG 16 in float32, full-
  length masking), both through ``run_attribution`` + ``mask_run`` on the same questions.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from _flops import ArchSpec, forward_flops, gradient_sample_flops

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.endpoints import prompt_of
from xurs_pipeline.attribution.gradients import accumulate
from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.model import DTYPES, Objective, set_precision
from xurs_pipeline.attribution.plan import eg_plan
from xurs_pipeline.attribution.references import prepare_training
from xurs_pipeline.evaluation.masking import MaskingQuestion, MaskingSpec, zero_masking_effects
from xurs_pipeline.models import RandomSetClassifier

CPU = torch.device("cpu")
N_REFS = 16


def near_256(prompts: pd.DataFrame, split: str, n: int) -> pd.DataFrame:
    """The first ``n`` prompts of ``split`` with 240..272 tokens."""
    lengths = prompts["input_ids"].map(len)
    return prompts[(prompts["split"] == split) & lengths.between(240, 272)].head(n)


def gemm_rate(dtype: torch.dtype, n: int = 1024, reps: int = 4) -> float:
    """GFLOP/s of ``torch.matmul`` n^3 in ``dtype`` (best of ``reps``)."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def _cast(model: RandomSetClassifier, precision: str) -> None:
    set_precision(model, DTYPES[precision])


# ------------------------------------------------------------------------------------------- mask
def section_mask(model: RandomSetClassifier, prompts: pd.DataFrame, n_questions: int, n_random: int) -> None:
    spec = MaskingSpec(n_random=n_random, k_max=5, seed=0, batch_size=16)
    rows = prompts[prompts["split"] == "test"].head(n_questions)
    passes = 1 + spec.k_max * (1 + spec.n_random)
    variants = {
        "full, float32 (before)": ("float32", False),
        "prefix cache, float32": ("float32", True),
        "prefix cache, bfloat16": ("bfloat16", True),
        "full, bfloat16": ("bfloat16", False),
    }
    times: dict[str, list[float]] = {v: [] for v in variants}
    diffs: dict[str, list[float]] = {v: [] for v in variants}
    lengths = []
    for qi, row in enumerate(rows.itertuples(index=False)):
        ids = torch.tensor(np.asarray(row.input_ids, dtype=np.int64))[None]
        rng = np.random.default_rng(qi)
        ranking = {"width": rng.random(ids.shape[1])}
        lengths.append(ids.shape[1])
        ref = None
        names = list(variants)
        order = names if qi % 2 == 0 else names[::-1]
        results = {}
        for name in order:
            precision, reuse = variants[name]
            _cast(model, precision)
            with torch.inference_mode():
                embeds = model.embed(ids)[0]
            q = MaskingQuestion(
                str(row.record_id),
                embeds,
                torch.ones(ids.shape[1], dtype=torch.long),
                torch.arange(ids.shape[1]),
                np.asarray(row.eligible, dtype=bool),
                0,
            )
            start = time.perf_counter()
            (eff,) = zero_masking_effects(
                classifier_mass_fn(model), q, ranking, replace(spec, reuse_prefix=reuse)
            )
            times[name].append(time.perf_counter() - start)
            results[name] = np.concatenate([[eff.f_x], eff.top_delta, eff.random_delta.ravel()])
        ref = results["full, float32 (before)"]
        for name in names:
            diffs[name].append(float(np.abs(results[name] - ref).max()))
        spent = ", ".join(f"{n} {times[n][-1]:.1f} s" for n in names)
        print(f"question {qi} ({ids.shape[1]} tokens): {spent}", flush=True)
    _cast(model, "float32")
    base = np.asarray(times["full, float32 (before)"])
    table = [
        [
            name,
            float(np.median(t)),
            passes / float(np.median(t)),
            float(np.median(base / np.asarray(t))),
            C.spread(base / np.asarray(t)),
            max(diffs[name]),
        ]
        for name, t in times.items()
    ]
    print(
        f"\n{len(rows)} MedQA test questions, {int(np.median(lengths))} tokens (median), "
        f"{passes} passes each\n"
    )
    print(
        C.markdown_table(
            [
                "variant",
                "s / question",
                "passes / s",
                "speed-up vs before (median)",
                "per question",
                "max abs diff of F(X), D vs before",
            ],
            table,
        )
    )


# -------------------------------------------------------------------------------------- precision
def _engine(model, prompt, refs, plan, precision: str):
    _cast(model, precision)
    p = prompt_of(model, prompt, CPU)
    start = time.perf_counter()
    sums = accumulate(model, Objective.build((0,), "direct"), p, refs, plan, 8)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        mask = p.attention_mask
        w_x = float(_width(model, p.embeds, mask, p.position_ids))
        base = refs.embeds(model.embed, torch.arange(len(refs)), p.embeds)
        n = len(refs)
        w_ref = _width(model, base, mask.expand(n, -1), p.position_ids.expand(n, -1))
    draws = np.bincount(plan.ref_index, minlength=n)
    ref_mean = float((w_ref.double() * torch.as_tensor(draws / draws.sum())).sum())
    e = sums.e[0]  # weights 1/n: already the mean
    residual = abs(float(e.sum()) - (w_x - ref_mean))
    return seconds, e, residual


def _width(model, embeds, mask, positions) -> torch.Tensor:
    from xurs_pipeline.credal import credal_width

    return credal_width(model(embeds, mask, positions).masses.double(), validate=False)[..., 0]


def section_precision(
    model: RandomSetClassifier, prompts: pd.DataFrame, pad_id: int, n_questions: int
) -> None:
    questions = near_256(prompts, "test", n_questions)
    train = prompts[prompts["split"] == "train"].head(N_REFS)
    ref_ids = [list(map(int, x)) for x in train["input_ids"]]
    spec = ArchSpec.from_config("smollm2", model.backbone.config)
    rows, gemm = [], {"float32": [], "bfloat16": []}
    for qi, row in enumerate(questions.itertuples(index=False)):
        ids = list(map(int, row.input_ids))
        refs = prepare_training(ids, ref_ids, list(train["record_id"]), pad_id, CPU)
        plan = eg_plan(N_REFS, 16, 1000 + qi)
        out = {}
        for precision in ("float32", "bfloat16") if qi % 2 == 0 else ("bfloat16", "float32"):
            out[precision] = _engine(model, ids, refs, plan, precision)
            gemm[precision].append(gemm_rate(DTYPES[precision]))
        (t32, e32, r32), (t16, e16, r16) = out["float32"], out["bfloat16"]
        rel = float((e16 - e32).norm() / e32.norm())
        top32 = set(torch.topk(e32.norm(dim=-1), 10).indices.tolist())
        top16 = set(torch.topk(e16.norm(dim=-1), 10).indices.tolist())
        flops = gradient_sample_flops(spec, len(ids)).total
        rows.append(
            [
                qi,
                len(ids),
                t32 / 16 * 1e3,
                t16 / 16 * 1e3,
                t32 / t16,
                rel,
                len(top32 & top16) == 10,
                r32,
                r16,
                flops * 16 / t32 / 1e9,
                flops * 16 / t16 / 1e9,
            ]
        )
        print(
            f"question {qi}: fp32 {t32:.1f} s, bf16 {t16:.1f} s, ratio {t32 / t16:.2f}, rel L2 {rel:.4f}",
            flush=True,
        )
    _cast(model, "float32")
    arr = np.asarray([r[2:] for r in rows], dtype=float)
    print()
    print(
        C.markdown_table(
            [
                "question",
                "tokens",
                "fp32 ms / sample",
                "bf16 ms / sample",
                "fp32 / bf16",
                "rel. L2 (e)",
                "same top-10",
                "R fp32",
                "R bf16",
                "fp32 GFLOP/s",
                "bf16 GFLOP/s",
            ],
            rows,
        )
    )
    g32, g16 = float(np.median(gemm["float32"])), float(np.median(gemm["bfloat16"]))
    print(
        f"\nmedian: fp32 / bf16 {np.median(arr[:, 2]):.2f}x (range {C.spread(arr[:, 2])}); rel. L2 "
        f"median {np.median(arr[:, 3]):.4f}, max {arr[:, 3].max():.4f}; same top-10 on "
        f"{arr[:, 4].mean():.0%} of questions; R fp32 median {np.median(arr[:, 5]):.4f}, "
        f"bf16 {np.median(arr[:, 6]):.4f}\n"
        f"GEMM 1024^3 next to them: fp32 {g32:.0f} GFLOP/s, bf16 {g16:.0f} GFLOP/s ({g16 / g32:.2f}x); "
        f"gradient sample: fp32 {np.median(arr[:, 7]):.0f} GFLOP/s "
        f"({np.median(arr[:, 7]) / g32:.2f} of fp32 GEMM), "
        f"bf16 {np.median(arr[:, 8]):.0f} GFLOP/s ({np.median(arr[:, 8]) / g16:.2f} of bf16 GEMM, "
        f"{np.median(arr[:, 8]) / g32:.2f} of fp32 GEMM); forward pass "
        f"{forward_flops(spec, 256) / 1e9:.1f} GFLOP"
    )


# -------------------------------------------------------------------------------------- estimator
def section_estimator(
    model: RandomSetClassifier,
    prompts: pd.DataFrame,
    pad_id: int,
    precision: str,
    n_questions: int,
    configs: list[str],
) -> None:
    from xurs_pipeline.attribution.runner import RunOutput, run_attribution

    _cast(model, precision)
    test = prompts[prompts["split"] == "test"]
    keep = set(test["record_id"].head(n_questions)) | set(
        prompts[prompts["split"] == "train"]["record_id"].head(N_REFS)
    )
    frame = prompts[prompts["record_id"].isin(keep)]
    rows = []
    for spec in configs:
        method, _, budget = spec.partition(":")
        kwargs = {"n_samples": int(budget)} if method == "eg" else {"ig_points": int(budget)}
        if method == "igA":
            kwargs.update(ig_adaptive=True, ig_tolerance=0.05, ig_refine_factor=2, ig_max_points=64)
        cfg = AttributionConfig(
            method="eg" if method == "eg" else "ig",
            refs_per_collection=N_REFS,
            max_questions=n_questions,
            samples_per_call=8,
            precision=precision,
            progress=False,
            **kwargs,
        )
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            run_attribution(model, frame, cfg, pad_id=pad_id, max_positions=None, out=RunOutput(out, "bench"))
            seconds = time.perf_counter() - start
            table = pd.read_parquet(Path(out) / "attributions.parquet")
        r = table["residual"].to_numpy(float)
        rows.append(
            [
                spec,
                float(table["grad_evals"].median()),
                seconds / n_questions,
                float(np.median(r)),
                float(r.max()),
                bool(np.median(r) <= 0.01 and r.max() <= 0.05),
            ]
        )
        print(rows[-1], flush=True)
    _cast(model, "float32")
    print(f"\n{n_questions} MedQA test questions, {N_REFS} training references, {precision}\n")
    print(
        C.markdown_table(
            ["estimator", "gradient evals / question", "s / question", "median R", "max R", "meets App. B.4"],
            rows,
        )
    )


# ------------------------------------------------------------------------------------------ medqa
def _medqa_path(model, frame, pad_id, cfg: AttributionConfig, reuse: bool, precision: str) -> float:
    """Seconds for ``run_attribution`` on the frame's test questions + ``mask_run`` on its rows."""
    from xurs_pipeline.attribution.runner import RunOutput, run_attribution
    from xurs_pipeline.evaluation.mask_eval import mask_run

    _cast(model, precision)
    spec = MaskingSpec(n_random=20, k_max=5, seed=0, batch_size=16, reuse_prefix=reuse)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_attribution(model, frame, cfg, pad_id=pad_id, max_positions=None, out=RunOutput(out, "b"))
        rows = pd.read_parquet(Path(out) / "attributions.parquet").assign(target_fn="width")
        mask_run(classifier_mass_fn(model), model.embed, frame, rows, spec, CPU)
        return time.perf_counter() - start


def section_medqa(model, prompts, pad_id, n_questions: int, rounds: int, new: AttributionConfig) -> None:
    test_ids = list(prompts[prompts["split"] == "test"]["record_id"].head(n_questions))
    train_ids = list(prompts[prompts["split"] == "train"]["record_id"].head(N_REFS))
    frame = prompts[prompts["record_id"].isin(test_ids + train_ids)]
    base = dict(refs_per_collection=N_REFS, max_questions=n_questions, samples_per_call=8, progress=False)
    today = AttributionConfig(method="eg", n_samples=16, precision="float32", **base)
    new = replace(new, **base)
    label = f"now: {new.method} {new.precision} + prefix-cache masking {new.precision}"
    variants = {
        "today: EG 16 fp32 + full-length masking fp32": lambda: _medqa_path(
            model, frame, pad_id, today, False, "float32"
        ),
        label: lambda: _medqa_path(model, frame, pad_id, new, True, new.precision),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(rounds):
        for name in list(variants) if r % 2 == 0 else list(variants)[::-1]:
            times[name].append(variants[name]())
            print(f"round {r}: {name}: {times[name][-1]:.0f} s for {n_questions} questions", flush=True)
    _cast(model, "float32")
    names = list(times)
    ratio = np.asarray(times[names[0]]) / np.asarray(times[names[1]])
    rows = [
        [n, float(np.median(t)) / n_questions, 3600 * n_questions / float(np.median(t))]
        for n, t in times.items()
    ]
    print(C.markdown_table(["path", "s / question", "questions / hour"], rows))
    print(f"\nnow / today throughput: {np.median(ratio):.2f}x (per round {C.spread(ratio)})")


def _local_attribution() -> dict[str, object]:
    """The estimator keys of ``conf/attribution/local.yaml`` (composed over ``default.yaml``)."""
    import yaml

    conf = C.ROOT / "conf" / "attribution"
    merged = {
        **yaml.safe_load((conf / "default.yaml").read_text()),
        **yaml.safe_load((conf / "local.yaml").read_text()),
    }
    keys = (
        "method",
        "n_samples",
        "ig_points",
        "ig_quadrature",
        "ig_adaptive",
        "ig_tolerance",
        "ig_refine_factor",
        "ig_max_points",
        "precision",
    )
    return {k: merged[k] for k in keys}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--section", choices=["mask", "precision", "estimator", "medqa"], required=True)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--n-random", type=int, default=20, help="mask: random draws per question (local: 20)"
    )
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--precision", default="bfloat16")
    parser.add_argument("--estimators", default="eg:16,eg:64,ig:4,ig:8,igA:4")
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header(
        f"bench_speed: {args.section}",
        f"python bench/bench_speed.py --section {args.section} --questions {args.questions}",
    )
    model, pad_id, tokenizer = C.smollm2()
    prompts = C.medqa_prompts(tokenizer)
    if args.section == "mask":
        section_mask(model, prompts, args.questions, args.n_random)
    elif args.section == "precision":
        section_precision(model, prompts, pad_id, args.questions)
    elif args.section == "medqa":
        new = AttributionConfig(**_local_attribution())
        section_medqa(model, prompts, pad_id, args.questions, args.rounds, new)
    else:
        section_estimator(model, prompts, pad_id, args.precision, args.questions, args.estimators.split(","))
    C.print_footer(started)


if __name__ == "__main__":
    main()
