"""Benchmark 4: attribution with 1 vs 2 processes: identical merged results, and the speedup.

    /work/venv/bin/python bench/bench_sharding.py [--quick]

Setup (in a temporary directory): a tiny random Llama backbone (hidden 256, 4 layers, 4 heads) with a
``belief14`` head, saved with ``save_classifier``; 12 test questions and 32 training prompts of random
token ids (64-96 tokens); EG with 16 training references, 64 samples, 8 per call, predicted answer.
Each variant runs ``bench/_shard_worker.py`` (the ``attribute`` stage's ``run_attribution`` call and
process setup) as a fresh subprocess, interleaved over rounds:

- 1 process x 2 threads: ``python bench/_shard_worker.py`` (torch uses both cores);
- 2 processes x 1 thread: ``torchrun --standalone --nproc_per_node 2`` (torchrun sets
  OMP_NUM_THREADS=1 per process), questions split round-robin, process 0 merges;
- 1 process x 1 thread: the single-process run with OMP_NUM_THREADS=1 (same per-process arithmetic as
  each torchrun worker).

The merged ``attributions.parquet`` (every column, exactly) and every tensor of every
``coords/*.safetensors`` file (bitwise, with its metadata) of the two-process run must equal the
single-process run's at the same per-process thread count; the script asserts it and reports the
comparison with the two-thread single process as well.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from safetensors import safe_open

from xurs_pipeline.models import build_classifier, save_classifier
from xurs_pipeline.models.backbone import TinySpec, load_backbone_dir, materialize_backbone

WORKER = str(Path(__file__).with_name("_shard_worker.py"))
TORCHRUN = str(Path(sys.executable).with_name("torchrun"))
CONFIG = {
    "method": "eg",
    "refs_per_collection": 16,
    "n_samples": 64,
    "samples_per_call": 8,
    "split": "test",
    "target": "predicted",
    "progress": False,
    "device": "cpu",
}


def prepare(work: Path, n_test: int = 12, n_train: int = 32) -> None:
    materialize_backbone(work / "backbone", "tiny", tiny=TinySpec(hidden_size=256, layers=4, heads=4))
    backbone = load_backbone_dir(work / "backbone")
    save_classifier(build_classifier(backbone, seed=0), work / "classifier")
    vocab = backbone.model.config.vocab_size
    rng = np.random.default_rng(0)
    rows = []
    for split, count in (("train", n_train), ("test", n_test)):
        for i in range(count):
            length = int(rng.integers(64, 97))
            rows.append(
                {
                    "record_id": f"{split}-{i:03d}",
                    "split": split,
                    "answer_idx": int(rng.integers(0, 4)),
                    "input_ids": [1, *rng.integers(4, vocab, length - 1).tolist()],
                    "eligible": [False] + [True] * (length - 1),
                }
            )
    pd.DataFrame(rows).to_parquet(work / "prompts.parquet")
    (work / "attribution.json").write_text(json.dumps(CONFIG))


def commands(work: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    return {
        "1 process x 2 threads": ([sys.executable, WORKER, str(work)], base),
        "2 processes x 1 thread (torchrun)": (
            [TORCHRUN, "--standalone", "--nproc_per_node", "2", WORKER, str(work)],
            base,
        ),
        "1 process x 1 thread": ([sys.executable, WORKER, str(work)], {**base, "OMP_NUM_THREADS": "1"}),
    }


def attribution_seconds(out: Path) -> float:
    """Longest in-process attribution time over the shards (from the shard reports)."""
    reports = [json.loads(p.read_text()) for p in (out / "parts").glob("shard-*.json")]
    return max(float(r["seconds"]) for r in reports)


def _coords(path: Path) -> tuple[dict, dict]:
    """(tensors, metadata) of one coords file. Its bytes are not compared: safetensors writes the
    metadata map in a per-process hash order, so identical content can differ byte for byte."""
    with safe_open(str(path), "pt") as handle:
        return {k: handle.get_tensor(k) for k in handle.keys()}, dict(handle.metadata() or {})  # noqa: SIM118


def same_result(a: Path, b: Path) -> tuple[bool, str]:
    """Exact equality of two merged outputs: every parquet column, every coords tensor (bitwise)."""
    fa, fb = (
        pd.read_parquet(p / "attributions.parquet").sort_values(["record_id", "target"]) for p in (a, b)
    )
    try:
        pd.testing.assert_frame_equal(fa.reset_index(drop=True), fb.reset_index(drop=True), check_exact=True)
    except AssertionError as err:
        return False, str(err).splitlines()[0]
    names = sorted(p.name for p in (a / "coords").iterdir())
    if names != sorted(p.name for p in (b / "coords").iterdir()):
        return False, "different coords files"
    differ = []
    for n in names:
        (ta, ma), (tb, mb) = _coords(a / "coords" / n), _coords(b / "coords" / n)
        if ma != mb or ta.keys() != tb.keys() or not all(torch.equal(ta[k], tb[k]) for k in ta):
            differ.append(n)
    detail = f"{len(fa)} rows, {len(names)} coords files" + (f"; differ: {differ[:3]}" if differ else "")
    return not differ, detail


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 timed round instead of 3")
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header(
        "Benchmark 4: attribution sharded over 1 vs 2 processes",
        "bench/bench_sharding.py" + (" --quick" if args.quick else ""),
    )
    rounds = 1 if args.quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        prepare(work)
        outs: dict[str, Path] = {}
        seconds: dict[str, list[float]] = {}

        def variant(name: str, argv: list[str], env: dict[str, str]):
            def run(r: int) -> None:
                out = work / f"out-{abs(hash(name)) % 10**6}-{r + 1}"
                subprocess.run([*argv, str(out)], env=env, check=True, capture_output=True, text=True)
                outs[name] = out
                if r >= 0:
                    seconds.setdefault(name, []).append(attribution_seconds(out))

            return run

        fns = {name: variant(name, argv, env) for name, (argv, env) in commands(work).items()}
        wall, _ = C.interleaved(fns, rounds, warmup=0)
        names = list(fns)
        checks = [(names[1], names[0]), (names[1], names[2])]
        verdicts = {pair: same_result(outs[pair[0]], outs[pair[1]]) for pair in checks}
    rows = [
        [
            n,
            float(np.median(wall[n])),
            C.spread(wall[n]),
            float(np.median(seconds[n])),
            C.median_ratio(wall, names[0], n),
        ]
        for n in names
    ]
    print(
        C.markdown_table(
            [
                "variant",
                "wall s (median)",
                "wall s (min..max)",
                "attribution s (median, slowest shard)",
                "speedup vs 1 process x 2 threads (wall)",
            ],
            rows,
        )
    )
    ratio = float(np.median(np.asarray(seconds[names[0]]) / np.asarray(seconds[names[1]])))
    print(f"\nSpeedup of the attribution itself (in-process seconds, slowest shard): {ratio:.2f}x")
    for (a, b), (ok, detail) in verdicts.items():
        print(f"- merged result of '{a}' == '{b}': {'identical (exact)' if ok else 'DIFFERENT'} ({detail})")
    C.print_footer(started)
    if not verdicts[checks[1]][0]:
        raise SystemExit("sharded and unsharded results differ at equal thread counts")


if __name__ == "__main__":
    main()
