"""Which stages ``dvc status`` marks stale after changing one params key, one key at a time.

Builds the smoke experiment with ``dvc repro`` in a fresh folder (or uses ``--project``, a reproduced
project), then for each ``key=value`` sets that one key in ``params.yaml``, reads ``dvc status --json`` and
restores the file. Prints a Markdown table: the key, how many stages are stale, and which.

    python bench/stale_stages.py --work /tmp/stale            # build the smoke project there, then measure
    python bench/stale_stages.py --project /tmp/stale/smoke   # measure an already reproduced project
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHANGES = (  # one key of each section (and the question-selection keys), each to a valid other value
    "data.medqa_path=elsewhere/medqa",
    "data.seed=1",
    "model.head_dropout=0.1",
    "train.lr_head=0.02",
    "attribution.n_samples=24",
    "attribution.max_questions=1",
    "attribution.record_ids=[nosuch]",
    "evaluation.bootstrap_resamples=400",
    "evaluation.gates.accuracy_min=0.5",
    "experiment_name=other",
)


def run(args: list[str], cwd: Path) -> str:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(cwd)}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def build(work: Path) -> Path:
    """The smoke experiment reproduced by DVC in ``work/smoke`` (no git)."""
    project = work / "smoke"
    for name in ("conf", "stages", "xurs_pipeline"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", project / "dvc.yaml")
    run([str(BIN / "dvc"), "init", "--no-scm", "-q"], project)
    run([str(BIN / "xurs"), "params", "experiment=smoke"], project)
    run([str(BIN / "dvc"), "repro", "-q"], project)
    return project


def with_key(params: dict, change: str) -> dict:
    """``params`` with the one ``key=value`` of ``change`` set (the value read as YAML)."""
    key, _, value = change.partition("=")
    changed = json.loads(json.dumps(params))
    node = changed
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    if last not in node:
        raise SystemExit(f"{key}: no such key in params.yaml")
    node[last] = yaml.safe_load(value)
    return changed


def stale_stages(project: Path, change: str) -> list[str]:
    """The stages ``dvc status`` lists after ``change`` (params.yaml restored afterwards)."""
    params_file = project / "params.yaml"
    original = params_file.read_text()
    try:
        params_file.write_text(yaml.safe_dump(with_key(yaml.safe_load(original), change), sort_keys=False))
        status = json.loads(run([str(BIN / "dvc"), "status", "--json"], project) or "{}")
    finally:
        params_file.write_text(original)
    return [name.rpartition(":")[2] for name in status]


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--work", type=Path, help="an empty folder to build the smoke project in")
    where.add_argument("--project", type=Path, help="a project reproduced by dvc repro")
    parser.add_argument("changes", nargs="*", default=CHANGES, help="key=value (default: a key per section)")
    args = parser.parse_args()
    project = args.project or build(args.work)
    if json.loads(run([str(BIN / "dvc"), "status", "--json"], project) or "{}"):
        sys.exit(f"{project}: not up to date before any change; run dvc repro first")
    print("| changed key | stale | stages `dvc status` marks stale |\n|---|---|---|")
    for change in args.changes:
        stale = stale_stages(project, change)
        print(f"| `{change}` | {len(stale)} | {', '.join(stale) or '(none)'} |")


if __name__ == "__main__":
    main()
