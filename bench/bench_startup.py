"""Stage start-up: seconds to import each stage's task module (Python, libraries, config schema), in the
working tree and in a baseline commit side by side, each import in a fresh process (order alternating).

    python bench/bench_startup.py [--baseline COMMIT] [--rounds 3] [--stages tables,report,mask_eval]

The baseline tree is ``git archive COMMIT`` unpacked into a temporary directory (no checkout). Every
``python -m stages <name>`` pays this before Hydra composes ``params.yaml``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as C
import numpy as np


def import_seconds(tree: Path, stage: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", f"import xurs_pipeline.tasks.{stage}"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": ""},
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", default="7aa5c83")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stages", default="tables,report,mask_eval")
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header(
        "stage start-up (import time)", f"python bench/bench_startup.py --baseline {args.baseline}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", args.baseline], cwd=C.ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        trees = {"baseline": Path(tmp), "now": C.ROOT}
        rows = []
        for stage in args.stages.split(","):
            times: dict[str, list[float]] = {k: [] for k in trees}
            for r in range(args.rounds):
                for name in list(trees) if r % 2 == 0 else list(trees)[::-1]:
                    times[name].append(import_seconds(trees[name], stage))
            ratio = np.asarray(times["baseline"]) / np.asarray(times["now"])
            rows.append(
                [
                    stage,
                    float(np.median(times["baseline"])),
                    float(np.median(times["now"])),
                    float(np.median(ratio)),
                    C.spread(ratio),
                ]
            )
    print(C.markdown_table(["stage", f"{args.baseline} s", "now s", "baseline / now", "per round"], rows))
    C.print_footer(started)


if __name__ == "__main__":
    main()
