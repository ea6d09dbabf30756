"""The test suite as CI runs it: ``pytest -q`` timed as one process (README command 2, CI's first job in
`.ci/run`; ``-- -m second_job`` times CI's second job, the tests pyproject.toml's addopts leave out).

    python bench/bench_tests.py [--durations 15] [--log FILE] [-- extra pytest arguments]

Prints the machine facts and the load average before and after (the suite shares the machine: a load
above the core count stretches the wall time), the number of tests collected, pytest's summary line, the
wall time, and the slowest tests. The README's figure comes from this command.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import _common as C

PYTEST = Path(sys.executable).parent / "pytest"  # the console script CI runs (no cwd on sys.path)


def collected(extra: list[str]) -> str:
    command = [str(PYTEST), "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", *extra]
    out = subprocess.run(command, cwd=C.ROOT, capture_output=True, text=True, check=False).stdout
    return out.strip().splitlines()[-1] if out.strip() else "nothing collected"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--durations", type=int, default=15, help="list this many slowest tests")
    parser.add_argument("--log", type=Path, help="also write pytest's whole output here")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --), e.g. --cov=xurs_pipeline")
    args = parser.parse_args()
    C.print_header("Test suite wall time", "python bench/bench_tests.py " + " ".join(sys.argv[1:]))
    print(f"- tests: {collected(args.extra)}")
    command = [str(PYTEST), "-q", "-p", "no:cacheprovider", f"--durations={args.durations}", *args.extra]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=C.ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if args.log:
        args.log.write_text(result.stdout + result.stderr)
    lines = result.stdout.splitlines()
    summary = next((line for line in reversed(lines) if re.search(r"\d+ (passed|failed)", line)), "?")
    slowest = [line for line in lines if re.match(r"^\d+\.\d+s (call|setup|teardown) ", line)]
    print(f"- pytest: {summary.strip('= ')} (exit status {result.returncode})")
    print(f"- wall time: {wall:.0f} s ({wall / 60:.1f} min)")
    print(f"- load average (1/5/15 min) at the end: {C.load_average()}\n")
    print("slowest:")
    for line in slowest:
        print(f"    {line}")
    sys.exit(result.returncode)


if __name__ == "__main__":
    main()
