"""Projection: time and memory of the paper's MedQA attribution runs (Table 5) on A30 and H100 GPUs.

    /work/venv/bin/python bench/project_paper_runs.py [--tokens 250] [--max-tokens 512] [--questions 100]

Computed, not measured on a GPU. What each run does (the engine as implemented in
``xurs_pipeline/attribution``):

- per question: ``n_collections x n_samples`` gradient samples in batches of ``samples_per_call``, and
  one forward-only width evaluation per prepared reference of every collection (``prepared_widths``,
  batches of ``eval_batch_size`` = 16) plus one for the input;
- per process, once: the natural widths of every pool reference (``run_shard``; each shard does this);
- FLOPs from ``bench/_flops.py`` (4 P T + 12 layers T^2 h hd per gradient sample, forward alone for a
  width evaluation), with the LoRA adapters of Table 4 left unmerged (rank 16 for SmolLM3, 8 for Llama).

Assumptions (stated in the output too): every prompt (questions and references) has the mean length T;
GPUs reach ``--mfu`` of their dense FP16/BF16 tensor peak on these GEMMs (two values: a pessimistic and
an optimistic one), but never run a call faster than reading the weights from memory (twice per
gradient call, once per forward call); memory = weights (2 bytes each) + LoRA + the activations autograd
saves for one gradient batch (measured on the CPU with Hugging Face's own implementation of each
architecture, SDPA attention, no KV cache) + one more layer's worth as backward workspace + 1 GiB of
CUDA context; eight GPUs split the 100 questions round-robin (13 on the busiest) and each repeats the
pool's natural widths.
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from dataclasses import dataclass

import _common as C
import torch
from _flops import ArchSpec, forward_flops, gradient_sample_flops, saved_activation_bytes
from transformers import LlamaConfig, SmolLM3Config

GIB = 2**30


@dataclass(frozen=True)
class Gpu:
    name: str
    tflops: float  # dense FP16/BF16 tensor-core peak
    memory_gib: float
    bandwidth_gbs: float


GPUS = (
    Gpu("A30 24 GB (paper)", 165.0, 24.0, 933.0),
    Gpu("H100 SXM 80 GB", 989.0, 80.0, 3350.0),
)


@dataclass(frozen=True)
class Run:
    """One paper attribution run (Table 5) and its model (published Hugging Face config values)."""

    label: str
    config: object
    tied: bool
    lora_rank: int
    n_collections: int
    refs: int
    samples: int
    per_call: int
    dtype: str


SMOLLM3 = SmolLM3Config(  # HuggingFaceTB/SmolLM3-3B config.json
    vocab_size=128256,
    hidden_size=2048,
    intermediate_size=11008,
    num_hidden_layers=36,
    num_attention_heads=16,
    num_key_value_heads=4,
)
LLAMA2 = LlamaConfig(  # meta-llama/Llama-2-7b-hf config.json
    vocab_size=32000,
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=32,
)
RUNS = (  # Table 5 budgets, Table 4 LoRA ranks
    Run("SmolLM3-3B", SMOLLM3, tied=True, lora_rank=16, n_collections=1, refs=256, samples=512, per_call=8,
        dtype="fp16"),
    Run("Llama-2-7B", LLAMA2, tied=False, lora_rank=8, n_collections=3, refs=1024, samples=1024, per_call=2,
        dtype="bf16"),
)  # fmt: skip
EVAL_BATCH = 16
CONTEXT_GIB = 1.0


def call_seconds(flops: float, weight_bytes: float, reads: int, gpu: Gpu, mfu: float) -> float:
    """One batched call: compute at ``mfu`` of peak, but no faster than ``reads`` passes over the weights."""
    return max(flops / (gpu.tflops * 1e12 * mfu), reads * weight_bytes / (gpu.bandwidth_gbs * 1e9))


def project(
    run: Run, spec: ArchSpec, tokens: int, max_tokens: int, questions: int, per_layer: float, outside: float
) -> list:
    weights = 2.0 * (spec.total_params(run.tied) + spec.lora_params(run.lora_rank))
    grad = gradient_sample_flops(spec, tokens, run.lora_rank).total
    fwd = forward_flops(spec, tokens, run.lora_rank)
    grad_calls = run.n_collections * math.ceil(run.samples / run.per_call)
    width_calls = run.n_collections * math.ceil(run.refs / EVAL_BATCH) + 1
    pool_calls = run.n_collections * math.ceil(run.refs / EVAL_BATCH)
    per_token = per_layer * (spec.layers + 1) + outside  # + 1 layer of backward workspace
    activations = run.per_call * tokens * per_token
    memory = (weights + activations) / GIB + CONTEXT_GIB
    memory_max = (weights + run.per_call * max_tokens * per_token) / GIB + CONTEXT_GIB
    per_question_flops = run.n_collections * (run.samples * grad + run.refs * fwd) + fwd
    rows = []
    for gpu in GPUS:
        for mfu in (0.25, 0.5):
            q = grad_calls * call_seconds(run.per_call * grad, weights, 2, gpu, mfu)
            q += width_calls * call_seconds(EVAL_BATCH * fwd, weights, 1, gpu, mfu)
            pool = pool_calls * call_seconds(EVAL_BATCH * fwd, weights, 1, gpu, mfu)
            one, eight = questions * q + pool, math.ceil(questions / 8) * q + pool
            fits = (
                "yes" if memory_max <= gpu.memory_gib else ("mean only" if memory <= gpu.memory_gib else "NO")
            )
            rows.append(
                [run.label, gpu.name, f"{mfu:.0%}", q, one / 3600, eight / 3600, memory, memory_max, fits]
            )
    share = run.n_collections * run.refs * fwd / per_question_flops
    summary = (
        f"- {run.label}: {spec.total_params(run.tied) / 1e9:.2f} B weights ({weights / GIB:.1f} GiB in "
        f"{run.dtype} with LoRA r={run.lora_rank}), {run.n_collections} x {run.samples} gradient samples + "
        f"{run.n_collections} x {run.refs} reference widths per question; {grad / 1e12:.2f} TFLOP per "
        f"gradient sample, {per_question_flops / 1e15:.2f} PFLOP per question ({share:.0%} of it the "
        f"forward-only prepared-reference widths); saved activations {per_layer / 1024:.0f} KiB per token "
        f"per layer -> {activations / GIB:.1f} GiB for one batch of {run.per_call} x {tokens} tokens."
    )
    return [summary, rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=250, help="mean prompt length T")
    parser.add_argument("--max-tokens", type=int, default=512, help="longest prompt (data.max_tokens)")
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header(
        "Projection: the paper's MedQA attribution runs on GPUs (Table 5 budgets)",
        f"bench/project_paper_runs.py --tokens {args.tokens} --max-tokens {args.max_tokens} "
        f"--questions {args.questions}",
    )
    summaries, rows = [], []
    for run in RUNS:
        spec = ArchSpec.from_config(run.label, run.config)
        per_layer, outside = saved_activation_bytes(copy.deepcopy(run.config), torch.float16)
        summary, run_rows = project(
            run, spec, args.tokens, args.max_tokens, args.questions, per_layer, outside
        )
        summaries.append(summary)
        rows += run_rows
    print("\n".join(summaries) + "\n")
    print(
        C.markdown_table(
            [
                "model",
                "GPU",
                "of peak",
                "s / question",
                f"hours, {args.questions} q, 1 GPU",
                f"hours, {args.questions} q, 8 GPUs",
                f"GiB per GPU, T={args.tokens}",
                f"GiB per GPU, T={args.max_tokens}",
                "fits",
            ],
            rows,
        )
    )
    print(
        "\nAssumptions: dense tensor peaks A30 165 TFLOP/s, 933 GB/s; H100 SXM 989 TFLOP/s, 3.35 TB/s "
        "(FP16/BF16, no sparsity); 25% / 50% of peak bracket what Hugging Face eager/SDPA models reach in "
        "forward+backward at 500-2,000 tokens per call; every prompt has the mean length T for time; "
        "memory is given at T and at the longest prompt (all samples of a question have its length L); "
        "1 GiB CUDA context; 8 GPUs = independent shards."
    )
    C.print_footer(started)


if __name__ == "__main__":
    main()
