"""``xurs gates-sweep``: compare DVC experiments on their controlled-model gates (App. D.3).

Compare a sweep of training configurations on the controlled-model gates (App. D.3) and pick one before
spending time on attribution. Each configuration is a DVC experiment run up to the `gates` stage, which
needs only prepare, train and predict:

  dvc exp run gates -S experiment=controlled_v2 -S train.seed=17
  dvc exp run gates --queue -S experiment=controlled_v2 -S 'train.seed=7,17' -S 'train.lr_head=1e-3,3e-3'
  dvc queue start -j 1 && dvc queue status

This command reads `dvc exp show --json` (run here, or a saved copy with --from FILE) for the experiments and
their params, and each experiment's <paths.artifacts>/gates/gates.json through DVC at the experiment's
revision (dvc.api: DVC caches it, the experiment's dvc.lock names it), and writes one row per
experiment: its name, the params that differ between experiments, every gate value of the chosen split
(valid_share; familiar.* and unseen.* per wording-template group), whether all gates passed, and how many
failed (fewest first). The table goes to <out>/gates_sweep.{md,tex,csv}, or to the first free
<out>/gates_sweep_<n>.{md,tex,csv} when those exist (--overwrite replaces them), and the Markdown is printed.
Experiments without gate metrics (queued, failed, MedQA where gates do not apply) are listed on stderr.
Then `dvc exp apply <name>` and `dvc repro` run the rest of the pipeline on the chosen configuration.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from xurs_pipeline.commands.args import command
from xurs_pipeline.commands.experiment_files import experiment_json, parse_json
from xurs_pipeline.errors import XursError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="read saved `dvc exp show --json` output instead of running it",
    )
    p.add_argument(
        "-A",
        "--all-commits",
        action="store_true",
        help="experiments of every commit (`dvc exp show -A`), not only those based on HEAD: after a "
        "commit, the sweep run before it is found only this way",
    )
    p.add_argument("--split", default="dev", help="which split's gates to compare (default: dev)")
    p.add_argument(
        "--workspace",
        action="store_true",
        help="add a row for the workspace (after `dvc exp run` it repeats the last experiment)",
    )
    p.add_argument(
        "--out",
        default="results/sweeps",
        help="directory for gates_sweep.{md,tex,csv} (default: results/sweeps)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing gates_sweep.{md,tex,csv} (default: write gates_sweep_<n>.* beside it)",
    )


def exp_show_json(cwd: str | Path = ".", all_commits: bool = False) -> list[dict[str, Any]]:
    """``dvc exp show --json`` (``-A`` with ``all_commits``) in ``cwd``, parsed."""
    dvc = shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")
    command = [dvc, "exp", "show", "--json", *(["-A"] if all_commits else [])]
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as err:
        raise XursError(f"could not run `dvc exp show --json` ({err}); is DVC installed?") from err
    if result.returncode != 0:
        raise XursError(f"`dvc exp show --json` failed (exit {result.returncode}): {result.stderr[-2000:]}")
    return parse_json(result.stdout, "`dvc exp show --json` output")


def gates_detail(state: dict[str, Any], cwd: str | Path = ".") -> tuple[dict[str, Any] | None, str]:
    """An experiment's ``<paths.artifacts>/gates/gates.json`` as DVC holds it (``experiment_json``)."""
    from xurs_pipeline.reporting.gates_sweep import experiment_params

    path = f"{experiment_params(state).get('paths.artifacts', 'data')}/gates/gates.json"
    found, where = experiment_json(state, path, cwd)
    if found is None:
        return None, where
    return (found, where) if isinstance(found, dict) else (None, f"{path}: not a JSON object")


def free_stem(out: Path, stem: str, suffixes: tuple[str, ...] = (".md", ".tex", ".csv")) -> str:
    """``stem`` if none of ``<out>/<stem><suffix>`` exists, else the first ``<stem>_<n>`` (n = 2, 3, ...)
    with none existing, so a sweep never replaces an earlier (possibly committed) one unasked."""
    candidates = (stem if n == 1 else f"{stem}_{n}" for n in range(1, 10_000))
    for name in candidates:
        if not any((out / f"{name}{suffix}").exists() for suffix in suffixes):
            return name
    raise ValueError(f"{out}: no free name {stem}_<n> below 10000; use --overwrite or another --out")


def read_saved(source: str) -> list[dict[str, Any]]:
    """A saved ``dvc exp show --json`` file, with a message naming it instead of errno text."""
    path = Path(source)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "not found"
        raise ValueError(f"--from {source}: {what}; save one with `dvc exp show --json > FILE`")
    return parse_json(path.read_text(encoding="utf-8"), source)


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.io import config_hash
    from xurs_pipeline.reporting.gates_sweep import sweep_frame, sweep_spec
    from xurs_pipeline.reporting.render import write_table

    show = read_saved(args.source) if args.source else exp_show_json(all_commits=args.all_commits)
    sweep = sweep_frame(show, split=args.split, workspace=args.workspace, detail=gates_detail)
    for name, why in sweep.left_out.items():
        print(f"left out {name}: {why}", file=sys.stderr)
    if sweep.frame.empty:
        raise ValueError(
            f"no experiment has {args.split!r} gate metrics; run e.g. `dvc exp run gates -S train.seed=17`"
        )
    spec = sweep_spec(sweep)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is a file, not a directory")
    spec = spec if args.overwrite else replace(spec, name=free_stem(out, spec.name))
    paths = write_table(
        sweep.frame,
        spec,
        out,
        f"gates sweep ({len(sweep.frame)} experiments)",
        config_hash(sweep.frame.to_dict(orient="records")),
    )
    print(paths[0].read_text(), end="")
    print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0
