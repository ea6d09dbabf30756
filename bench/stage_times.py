"""Seconds per stage of a ``dvc repro`` log: each stage runs from its first logged timestamp to the next
stage's first (the last one to its own last timestamp), so DVC's bookkeeping between stages counts with the
stage before it.

    python bench/stage_times.py bench/results/cpu_swap_idle/dvc_repro_log.txt

Prints a markdown table (stage, seconds) and the total from the first stage's start to the last stage's end.
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path

STAGE = re.compile(r"Running stage '(\w+)'")
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def stage_spans(lines: list[str]) -> list[tuple[str, datetime, datetime]]:
    """(stage, first timestamp, last timestamp) per stage that logged one, in log order."""
    spans: list[list] = []
    for line in lines:
        if m := STAGE.match(line):
            spans.append([m.group(1), None, None])
        elif (t := STAMP.match(line)) and spans:
            stamp = datetime.fromisoformat(t.group(1))
            spans[-1][1] = spans[-1][1] or stamp
            spans[-1][2] = stamp
    return [(name, first, last) for name, first, last in spans if first is not None]


def stage_seconds(lines: list[str]) -> list[tuple[str, float]]:
    """Seconds per stage: from its first timestamp to the next stage's first (the last: to its last)."""
    spans = stage_spans(lines)
    ends = [nxt[1] for nxt in spans[1:]] + [spans[-1][2]] if spans else []
    return [(name, (end - first).total_seconds()) for (name, first, _), end in zip(spans, ends, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log", type=Path, help="a dvc repro log (progress bars may be filtered out)")
    log = parser.parse_args().log
    rows = stage_seconds(log.read_text(errors="replace").replace("\r", "\n").splitlines())
    if not rows:
        raise SystemExit(f"{log}: no stage with a logged timestamp")
    print("| stage | s |\n|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.0f} |")
    print(f"| total | {sum(s for _, s in rows):.0f} |")


if __name__ == "__main__":
    main()
