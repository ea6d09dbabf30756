"""Occlusion per token (``attribution.method=occlusion_token``) from the prompt's key/value cache against
full-length passes and against EG, per question at the same question length, side by side in one run.

    python bench/bench_occlusion.py [--questions 3] [--rounds 3] [--warmup 1] [--samples 16] [--refs 8]
        [--batch 16]

Model: SmolLM2-135M-Instruct (GGUF, dequantised once under .cache/) with a random belief14 head (seed 0);
prompts: MedQA test questions prepared as the ``prepare`` stage does (``_common.medqa_prompts``), the first
``--questions`` of 240..272 tokens. Every variant explains the same question's predicted answer through the
attribution interface (``attribution.methods.method_for(cfg).explain``), in float32 on the CPU:

- ``occlusion, cache``: L + 1 widths, ``--batch`` variants a pass, each pass from the smallest replaced
  position on (``attribution.reuse_prefix=true``, ``attribution/masked.py``);
- ``occlusion, full``: the same widths, every pass full length (``reuse_prefix=false``);
- ``EG``: the paper's estimator at medqa_local's budget (``--samples`` gradient samples against ``--refs``
  training references, 8 a call, the shared prefix reused), its reference widths included.

Per variant: wall seconds per question (median over rounds and questions, variants interleaved, order
rotating), forwards and gradient evaluations per question (from the rows), and for the cached occlusion the
largest |difference| of its token scores from the full-length ones. Load average at start and end.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import _common as C
import numpy as np

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import natural_pool, select_questions
from xurs_pipeline.attribution.methods import QuestionInputs, method_for
from xurs_pipeline.attribution.question import ReferencePool


def variants(samples: int, refs: int, batch: int) -> dict[str, AttributionConfig]:
    base = AttributionConfig(progress=False, eval_batch_size=batch, target="predicted")
    return {
        "occlusion, cache": replace(base, method="occlusion_token", reuse_prefix=True),
        "occlusion, full": replace(base, method="occlusion_token", reuse_prefix=False),
        "EG": replace(base, method="eg", n_samples=samples, refs_per_collection=refs, samples_per_call=8),
    }


def timed(model, pad_id: int, questions: list, pool: ReferencePool, configs: dict, rounds: tuple[int, int]):
    """Every variant on every question, interleaved, ``rounds`` (timed, warm-up): (wall seconds per variant,
    its rows per run)."""
    rows: dict[str, list] = {name: [] for name in configs}
    wall: dict[str, list[float]] = {name: [] for name in configs}

    def run(name: str, q) -> None:
        cfg = configs[name]
        refs = pool if name == "EG" else None
        rows[name].append(method_for(cfg).explain(QuestionInputs(model, q, refs, cfg, pad_id)).rows[0])

    for q in questions:
        calls = {name: (lambda r, n=name, q=q: run(n, q)) for name in configs}
        for name, times in C.interleaved(calls, *rounds)[0].items():
            wall[name] += times
    return wall, rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, default in (
        ("--questions", 3),
        ("--rounds", 3),
        ("--warmup", 1),
        ("--samples", 16),
        ("--refs", 8),
        ("--batch", 16),
    ):
        p.add_argument(flag, type=int, default=default)
    args = p.parse_args()
    started = time.perf_counter()
    command = (
        f"python bench/bench_occlusion.py --questions {args.questions} --rounds {args.rounds} "
        f"--warmup {args.warmup} "
        f"--samples {args.samples} --refs {args.refs} --batch {args.batch}"
    )
    C.print_header("Occlusion per token: prefix cache vs full length vs EG", command)
    model, pad_id, tokenizer = C.smollm2()
    prompts = C.medqa_prompts(tokenizer)
    lengths = prompts["input_ids"].map(len)
    chosen = prompts[(prompts["split"] == "test") & lengths.between(240, 272)].head(args.questions)
    configs = variants(args.samples, args.refs, args.batch)
    eg = configs["EG"]
    pool = natural_pool(model, prompts, eg, None)
    questions = select_questions(prompts, replace(eg, record_ids=list(chosen["record_id"])), None)
    wall, rows = timed(model, pad_id, questions, pool, configs, (args.rounds, args.warmup))
    print(f"questions: {len(questions)}, tokens {sorted(len(q.input_ids) for q in questions)}\n")
    table = C.cost_rows(configs, wall, rows)
    headers = ["variant", "s / question (median)", "range", "forwards", "gradient evaluations"]
    print(C.markdown_table(headers, table))
    pairs = zip(rows["occlusion, cache"], rows["occlusion, full"], strict=True)
    diff = max(float(np.abs(np.subtract(a.token_signed, b.token_signed)).max()) for a, b in pairs)
    print(f"\nmax |cached - full-length| token score: {diff:.2e}")
    print(
        f"full length / cache: {C.median_ratio(wall, 'occlusion, full', 'occlusion, cache'):.2f}x; "
        f"EG / cache: {C.median_ratio(wall, 'EG', 'occlusion, cache'):.2f}x"
    )
    C.print_footer(started)


if __name__ == "__main__":
    main()
