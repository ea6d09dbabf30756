"""Benchmark 5: wall time and peak memory of ``dvc repro`` for one experiment, in a fresh copy of the repo.

    /work/venv/bin/python bench/bench_repro.py [--experiment smoke] [--keep] [--source CHECKOUT]

Steps: copy the working tree (``git ls-files --cached --others --exclude-standard``: tracked files and
untracked files git does not ignore; no DVC cache, no artifacts) into a temporary directory; there,
``dvc config --local core.no_scm true`` (the copy is not a git repository), ``xurs params
experiment=<name>`` (compose ``conf/`` into ``params.yaml``) and ``/usr/bin/time -v dvc repro``. Every
stage runs from scratch. Prints the total wall time, each stage's wall time (between DVC's "Running stage"
lines), the peak resident memory of the largest process of the run (GNU time's "Maximum resident set
size", i.e. ``ru_maxrss`` over the process tree; ``resource.getrusage(RUSAGE_CHILDREN)`` where GNU time
is missing) and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as C

BIN = Path(sys.executable).parent
GNU_TIME = "/usr/bin/time"


def copy_tree(source_root: Path, dest: Path) -> int:
    """Copy a working tree's files (as git sees them) to ``dest``; returns the number of files."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=source_root,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    count = 0
    for name in filter(None, listed):
        source = source_root / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
            count += 1
    return count


def run_repro(copy: Path, log_path: Path) -> tuple[int, float, list[tuple[str, float]], float]:
    """(exit code, wall seconds, [(stage, seconds)], peak RSS in GiB) of ``dvc repro`` in ``copy``."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    timed = Path(GNU_TIME).is_file()
    argv = [GNU_TIME, "-v", "-o", str(log_path.with_suffix(".time"))] if timed else []
    argv += [str(BIN / "dvc"), "repro"]
    stages: list[tuple[str, float]] = []
    start = time.perf_counter()
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            argv, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            found = re.search(r"Running stage '([^']+)'", line)
            if found:
                stages.append((found.group(1), time.perf_counter()))
        code = proc.wait()
    end = time.perf_counter()
    durations = [
        (name, (stages[i + 1][1] if i + 1 < len(stages) else end) - t) for i, (name, t) in enumerate(stages)
    ]
    if timed:
        text = log_path.with_suffix(".time").read_text()
        kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    else:
        kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return code, end - start, durations, kib / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--experiment", default="smoke")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy (path printed)")
    parser.add_argument("--source", type=Path, default=C.ROOT, help="checkout to copy (default: this one)")
    args = parser.parse_args()
    root = args.source.resolve()
    known = sorted(p.stem for p in (root / "conf" / "experiment").glob("*.yaml"))
    if args.experiment not in known:
        raise SystemExit(f"--experiment={args.experiment!r}: not in conf/experiment/ (known: {known})")
    if not (root / "dvc.yaml").is_file():
        raise SystemExit(f"{root / 'dvc.yaml'}: missing; there is no pipeline to reproduce yet")
    started = time.perf_counter()
    C.print_header(
        f"Benchmark 5: dvc repro, experiment {args.experiment}",
        f"bench/bench_repro.py --experiment {args.experiment}",
    )
    tmp = Path(tempfile.mkdtemp(prefix=f"xurs-repro-{args.experiment}-"))
    try:
        copy = tmp / "repo"
        files = copy_tree(root, copy)
        subprocess.run([str(BIN / "dvc"), "config", "--local", "core.no_scm", "true"], cwd=copy, check=True)
        subprocess.run([str(BIN / "xurs"), "params", f"experiment={args.experiment}"], cwd=copy, check=True)
        code, wall, stages, peak = run_repro(copy, tmp / "repro.log")
        print(f"copied {files} files to {copy}; dvc repro exit code {code}\n")
        print(C.markdown_table(["stage", "wall s"], [*stages, ("total (dvc repro)", wall)]))
        print(f"\npeak resident memory (largest process): {peak:.2f} GiB")
        if code != 0:
            print(
                "\nlast lines of the log:\n" + "".join((tmp / "repro.log").read_text().splitlines(True)[-20:])
            )
    finally:
        if args.keep:
            print(f"\nkept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    C.print_footer(started)


if __name__ == "__main__":
    main()
