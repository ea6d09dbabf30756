"""Warm stage start-up (stages/warm.py): ``dvc repro -f`` of one experiment with every stage started
cold and with every stage forked from the warm server, side by side, and whether the artifacts are the same.

    python bench/warm_stages.py [--experiment smoke] [--rounds 1]

A copy of the working tree's code in a temporary directory (``dvc init --no-scm``, ``xurs params
experiment=<name>``) runs ``dvc repro`` once (untimed: it fills DVC's cache), then ``dvc repro -f`` cold and
warm, alternating which goes first, on one thread (``OMP_NUM_THREADS=1``, as a test worker's stages). The
MD5 of every file under ``data/`` after each run is compared with the first run's: the files that differ
(timings a stage records) must be the same for the cold and the warm runs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as C

sys.path.insert(0, str(C.ROOT))  # `stages` is the project's directory, not an installed package
from stages.__main__ import ENV
from stages.warm import start_server

BIN = Path(sys.executable).parent


def _digests(project: Path) -> dict[str, str]:
    files = sorted(p for p in (project / "data").rglob("*") if p.is_file())
    return {str(p.relative_to(project)): hashlib.md5(p.read_bytes()).hexdigest() for p in files}


def _run(project: Path, args: list[str], env: dict[str, str]) -> None:
    subprocess.run(args, cwd=project, env=env, check=True, capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--experiment", default="smoke")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header("warm stage start-up", f"python bench/warm_stages.py --experiment {args.experiment}")
    with tempfile.TemporaryDirectory(prefix="xw-bench-") as tmp:
        project, sock = Path(tmp) / "project", Path(tmp) / "s.sock"
        project.mkdir()
        for name in ("conf", "stages", "xurs_pipeline"):
            shutil.copytree(C.ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(C.ROOT / "dvc.yaml", project / "dvc.yaml")
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(project)}
        env = {k: v for k, v in env.items() if k != ENV} | {"OMP_NUM_THREADS": "1"}
        server = start_server(sock, env)
        try:
            rows = _compare(project, env, sock, args)
        finally:
            server.terminate()
            server.wait()
    headers = [
        "round",
        "cold (s)",
        "warm (s)",
        "cold / warm",
        "files under data/; differing from the first run",
    ]
    print(C.markdown_table([*headers, "the files that differ (the same in both modes)"], rows))
    C.print_footer(started)


def _compare(project: Path, env: dict[str, str], sock: Path, args: argparse.Namespace) -> list[list[object]]:
    _run(project, [str(BIN / "dvc"), "init", "--no-scm", "-q"], env)
    _run(project, [str(BIN / "xurs"), "params", f"experiment={args.experiment}"], env)
    _run(project, [str(BIN / "dvc"), "repro"], env)
    first, rows = _digests(project), []
    for r in range(args.rounds):
        seconds, changed = {}, {}
        for mode in ("cold", "warm") if r % 2 == 0 else ("warm", "cold"):
            start = time.perf_counter()
            _run(
                project, [str(BIN / "dvc"), "repro", "-f"], env | ({ENV: str(sock)} if mode == "warm" else {})
            )
            seconds[mode] = time.perf_counter() - start
            now = _digests(project)
            changed[mode] = sorted(f for f in first.keys() | now.keys() if first.get(f) != now.get(f))
        rows.append(
            [
                r,
                f"{seconds['cold']:.0f}",
                f"{seconds['warm']:.0f}",
                f"{seconds['cold'] / seconds['warm']:.2f}",
                f"{len(first)}; cold {len(changed['cold'])}, warm {len(changed['warm'])}",
                ", ".join(changed["warm"]) if changed["warm"] == changed["cold"] else f"differ: {changed}",
            ]
        )
    return rows


if __name__ == "__main__":
    main()
