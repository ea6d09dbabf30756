"""``bench/stage_times.py`` (BENCHMARKS.md's per-stage tables): a stage runs from its first timestamp to
the next stage's first; stages that log nothing are left out; a log without stages is refused."""

from __future__ import annotations

import subprocess
import sys

from bench_scripts import BENCH, load_bench_script

SCRIPT = BENCH / "stage_times.py"
LOG = """Running stage 'check':
> python -m stages check
Running stage 'train':
[2026-11-26 08:53:22,101][xurs][INFO] - stage train
epoch 0\r epoch 1
[2026-11-26 08:54:56,000][xurs][INFO] - done
Running stage 'attribute':
[2026-11-26 08:55:17,000][xurs][INFO] - stage attribute
[2026-11-26 09:00:21,000][xurs][INFO] - done
"""


def _module():
    return load_bench_script("stage_times")


def test_a_stage_runs_until_the_next_one_starts() -> None:
    seconds = _module().stage_seconds(LOG.replace("\r", "\n").splitlines())
    assert seconds == [("train", 115.0), ("attribute", 304.0)]  # 08:53:22-08:55:17; 08:55:17-09:00:21


def test_the_script_prints_a_table_and_refuses_a_log_without_stages(tmp_path) -> None:
    log = tmp_path / "log.txt"
    log.write_text(LOG)
    out = subprocess.run([sys.executable, str(SCRIPT), str(log)], capture_output=True, text=True, check=True)
    assert "| train | 115 |" in out.stdout
    assert "| total | 419 |" in out.stdout
    log.write_text("nothing ran\n")
    bad = subprocess.run([sys.executable, str(SCRIPT), str(log)], capture_output=True, text=True)
    assert bad.returncode != 0
    assert "no stage with a logged timestamp" in bad.stderr
