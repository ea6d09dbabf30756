"""``xurs gates-sweep``: compare DVC experiments on their controlled-model gates (App. D.3).

Compare a sweep of training configurations on the controlled-model gates (App. D.3) and pick one before
spending time on attribution. Each configuration is a DVC experiment run up to the `gates` stage, which
needs only prepare, train and predict:

  dvc exp run gates -S experiment=controlled_v2 -S train.seed=17
  dvc exp run gates --queue -S experiment=controlled_v2 -S 'train.seed=7,17' -S 'train.lr_head=1e-3,3e-3'
  dvc queue start -j 1 && dvc queue status

This command reads `dvc exp show --json` (run here, or a saved copy with --from FILE) for the experiments and
their params, and each experiment's <paths.artifacts>/gates/gates.json through DVC at the experiment's
revision (dvc.api: DVC caches it, the experiment's dvc.lock names it), only where the experiment ran the gates
stage under its own params (one stopped before gates keeps its baseline's dvc.lock entry, which is not its
result), and writes one row per experiment: its name, the params that differ between experiments, every gate
value of the chosen split (valid_share; familiar.* and unseen.* per wording-template group), whether all gates
passed, and how many failed (fewest first). The table goes to <out>/gates_sweep.{md,tex,csv}, or to the first
free <out>/gates_sweep_<n>.{md,tex,csv} when those exist (--overwrite replaces them), and the Markdown is
printed. Experiments without gate metrics of their own (queued, running or interrupted, failed, stopped before
gates, MedQA where gates do not apply) are listed on stderr with the reason.
Then `dvc exp apply <name>` and `dvc repro` run the rest of the pipeline on the chosen configuration.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from xurs_pipeline.commands.args import command
from xurs_pipeline.contracts import artifact
from xurs_pipeline.experiments.files import outputs
from xurs_pipeline.experiments.show import Experiment, shown


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


def gates_found(exps: list[Experiment]) -> tuple[list[tuple[str, dict[str, Any], Any]], dict[str, str]]:
    """(name, params, gates.json) of each experiment whose gates stage ran in it; name -> why not of the
    others (``experiments.files.outputs``)."""
    found, left_out = outputs(exps, artifact("gate_metrics").at)
    usable = [(exp.name, exp.params, gates) for exp, gates in found if isinstance(gates, dict)]
    left_out |= {e.name: "gates.json: not a JSON object" for e, gates in found if not isinstance(gates, dict)}
    return usable, left_out


def free_stem(out: Path, stem: str, suffixes: tuple[str, ...] = (".md", ".tex", ".csv")) -> str:
    """``stem`` if none of ``<out>/<stem><suffix>`` exists, else the first ``<stem>_<n>`` (n = 2, 3, ...)
    with none existing, so a sweep never replaces an earlier (possibly committed) one unasked."""
    candidates = (stem if n == 1 else f"{stem}_{n}" for n in range(1, 10_000))
    for name in candidates:
        if not any((out / f"{name}{suffix}").exists() for suffix in suffixes):
            return name
    raise ValueError(f"{out}: no free name {stem}_<n> below 10000; use --overwrite or another --out")


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.io import config_hash
    from xurs_pipeline.reporting.gates_sweep import sweep_frame, sweep_spec
    from xurs_pipeline.reporting.render import write_table

    found, left_out = gates_found(shown(args.source, args.all_commits, args.workspace))
    sweep = sweep_frame(found, split=args.split)
    for name, why in (left_out | sweep.left_out).items():
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
