"""The swap control (``controlled_swap``) on several data seeds in one call: each seed a scratch project
whose stages run in one process (``run_pipeline`` up to ``swap``), the seeds side by side (``--jobs``).

    python bench/swap_seeds.py --seeds 0 1 2 --out /tmp/swap_seeds -- attribution.max_questions=0 \\
        'data.families=[150,15,96]' model.source=/path/to/SmolLM2-135M-Instruct.Q4_1.gguf

Everything after ``--`` is passed to ``xurs params experiment=controlled_swap data.seed=S``. Writes
``OUT/seed<S>/`` (``summary.json``, ``params.yaml``, ``log.txt``, ``seconds.json``), all of it in one file
``OUT/seeds.json`` (for machines that return few files), and prints
``bench/swap_table.py``'s tables for every seed that finished. On a GPU the seeds share the card; on a
CPU use ``--jobs 1`` (or 2 seeds, one core each). ``--keep DIR`` keeps each seed's project as
``DIR/seed<S>/``. docs/swap-control.md's GPU and held-out seed tables are this script's output.
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
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from smoke_project import copy_sources  # noqa: E402
from swap_table import tables  # noqa: E402

PIPELINE = (  # stage log lines with timestamps, for the per-stage seconds
    "import logging; logging.basicConfig(level=logging.INFO, format='%(asctime)s %(name)s %(message)s'); "
    "from xurs_pipeline.config import load_params; from xurs_pipeline.tasks.pipeline import run_pipeline; "
    "run_pipeline(load_params('params.yaml'), until='swap')"
)


def start(seed: int, overrides: list[str], work: Path, threads: int) -> tuple[subprocess.Popen[bytes], float]:
    """Write seed ``seed``'s params in a scratch copy ``work`` and start its pipeline; (process, start)."""
    copy_sources(work)
    path = os.pathsep.join([str(work), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    params = [sys.executable, "-m", "xurs_pipeline.cli", "params", "experiment=controlled_swap",
              f"data.seed={seed}", *overrides]  # fmt: skip
    subprocess.run(params, cwd=work, env=env, check=True)
    log = (work / "log.txt").open("wb")
    proc = subprocess.Popen([sys.executable, "-c", PIPELINE], cwd=work, env=env, stdout=log,
                            stderr=subprocess.STDOUT)  # fmt: skip
    return proc, time.perf_counter()


def collect(work: Path, out: Path, seconds: float, returncode: int) -> bool:
    """Copy one seed's summary, params and log to ``out``; whether its swap stage finished."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("params.yaml", "log.txt"):
        shutil.copy(work / name, out / name)
    summary = work / "data/swap/study/summary.json"
    if summary.is_file():
        (out / "data/swap/study").mkdir(parents=True, exist_ok=True)
        shutil.copy(summary, out / "data/swap/study/summary.json")
    (out / "seconds.json").write_text(json.dumps({"seconds": seconds, "returncode": returncode}))
    return summary.is_file() and returncode == 0


def bundle(out: Path, done: dict[int, bool]) -> dict[int, dict]:
    """Every seed's outcome, seconds, params, log tail and summary in one mapping."""
    result = {}
    for seed, ok in done.items():
        folder = out / f"seed{seed}"
        summary = folder / "data/swap/study/summary.json"
        result[seed] = {
            "ok": ok,
            **json.loads((folder / "seconds.json").read_text()),
            "params": (folder / "params.yaml").read_text(),
            "log_tail": (folder / "log.txt").read_text()[-20000:],
            "summary": json.loads(summary.read_text()) if ok else None,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--out", type=Path, required=True, help="folder for seed<S>/ results")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at once (a GPU can take several)")
    parser.add_argument("--keep", type=Path, help="keep the seeds' projects here (a new folder), e.g. for "
                        "bench/swap_rerandomise.py; by default they are scratch and removed")  # fmt: skip
    parser.add_argument("overrides", nargs="*", help="after --: more `xurs params` overrides")
    args = parser.parse_args()
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    if args.keep is not None:
        args.keep.mkdir(parents=True)  # refuses an existing folder: never mixes with an earlier run
    with tempfile.TemporaryDirectory() if args.keep is None else nullcontext(str(args.keep)) as tmp:
        pending, running, done = list(args.seeds), {}, {}
        while pending or running:
            while pending and len(running) < args.jobs:
                seed = pending.pop(0)
                running[seed] = (*start(seed, args.overrides, Path(tmp) / f"seed{seed}", threads),)
            time.sleep(2)
            for seed, (proc, t0) in list(running.items()):
                if proc.poll() is not None:
                    seconds = time.perf_counter() - t0
                    ok = collect(
                        Path(tmp) / f"seed{seed}", args.out / f"seed{seed}", seconds, proc.returncode
                    )
                    print(f"seed {seed}: {'ok' if ok else 'FAILED'} in {seconds:.0f} s", flush=True)
                    done[seed] = ok
                    del running[seed]
    (args.out / "seeds.json").write_text(json.dumps(bundle(args.out, done), indent=1))
    for seed, ok in sorted(done.items()):
        if ok:
            print(tables(args.out / f"seed{seed}"), "\n", flush=True)
        else:
            print(f"seed {seed}: log tail\n" + (args.out / f"seed{seed}/log.txt").read_text()[-3000:])


if __name__ == "__main__":
    main()
