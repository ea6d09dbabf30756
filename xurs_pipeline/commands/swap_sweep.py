"""``xurs swap-sweep``: compare attribution methods on the swap control across DVC experiments (seeds).

Compare the attribution methods of the two-cue swap control (docs/swap-control.md) across experiments, e.g.
held-out data seeds, each a DVC experiment run up to the `swap` stage:

  xurs sweep --stage swap experiment=controlled_swap data.seed=5,6,7,8,9
  xurs swap-sweep

This command reads `dvc exp show --json` (run here, or a saved copy with --from FILE) and each experiment's
<paths.artifacts>/swap/study/summary.json through DVC at the experiment's revision (dvc.api), or with
--project DIR the summaries of projects run elsewhere (a cluster, `run_pipeline`). It writes one row per
method: the behavioural agreement on the clear probes per experiment (k/n), and pooled over the experiments
the training-rule swap accuracy, the agreement on all decided and on the clear probes with Wilson 95%
intervals, and the verdict (pass: pooled clear agreement >= 0.9 with lower bound >= 0.8); then how often
each model behaves as trained. The table goes to <out>/swap_sweep.{md,tex,csv} (or the first free
swap_sweep_<n>.*; --overwrite replaces it) and the Markdown is printed. Experiments without a swap study
are listed on stderr. --label data.seed names each column by that param (data.seed=6) instead of the
experiment's or directory's name.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from xurs_pipeline.commands.args import command
from xurs_pipeline.commands.experiment_files import experiment_json, parse_json
from xurs_pipeline.commands.gates_sweep import exp_show_json, free_stem, read_saved


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="source", metavar="FILE", help="saved `dvc exp show --json` output")
    p.add_argument("-A", "--all-commits", action="store_true", help="experiments of every commit")
    p.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="DIR",
        help="a project directory whose data/swap/study/summary.json to include (repeatable); with it "
        "alone, DVC is not asked",
    )
    p.add_argument("--label", metavar="KEY", help="name each column by this param, e.g. data.seed")
    p.add_argument("--out", default="results/sweeps", help="output directory (default: results/sweeps)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing swap_sweep.{md,tex,csv}")


def labelled(name: str, params: dict[str, Any], key: str | None) -> str:
    """The column name of one experiment: ``key=value`` of its params, or its name (no key, or not set)."""
    return f"{key}={params[key]}" if key and key in params else name


def experiment_studies(
    show: list[dict[str, Any]], label: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """column name (:func:`labelled`) -> swap summary of each experiment (and baseline commit) that has one;
    experiment name -> why not."""
    from xurs_pipeline.reporting.gates_sweep import experiment_params, experiment_states
    from xurs_pipeline.reporting.swap_sweep import SUMMARY

    studies, left_out = {}, {}
    for name, state, executor in experiment_states(show, workspace=False):
        if executor and executor != "success":
            left_out[name] = f"experiment {executor}"
            continue
        params = experiment_params(state)
        path = f"{params.get('paths.artifacts', 'data')}/{SUMMARY}"
        found, why = experiment_json(state, path)
        if not isinstance(found, dict) or "methods" not in found:
            left_out[name] = why if found is None else f"{path}: no method comparison (skipped or older)"
            continue
        studies[_unique(labelled(name, params, label), name, studies)] = found
    return studies, left_out


def _unique(column: str, name: str, taken: dict[str, Any]) -> str:
    """``column``, or ``column (name)`` when another experiment has the same label."""
    return column if column not in taken else f"{column} ({name})"


def project_studies(projects: list[str], label: str | None = None) -> dict[str, Any]:
    """column name (:func:`labelled` by the project's params.yaml, else the directory's name) -> its swap
    summary; ValueError naming a directory without one."""
    import yaml

    from xurs_pipeline.reporting.gates_sweep import flatten
    from xurs_pipeline.reporting.swap_sweep import SUMMARY

    out: dict[str, Any] = {}
    for project in projects:
        path = Path(project) / "data" / SUMMARY
        if not path.is_file():
            raise ValueError(f"--project {project}: {path} not found (run the swap stage there first)")
        found = parse_json(path.read_text(encoding="utf-8"), str(path))
        if "methods" not in found:
            raise ValueError(f"--project {project}: {path} has no method comparison")
        name, params_file = Path(project).resolve().name, Path(project) / "params.yaml"
        params = {}
        if label and params_file.is_file():
            params = flatten(yaml.safe_load(params_file.read_text()) or {})
        out[_unique(labelled(name, params, label), name, out)] = found
    return out


def natural_key(name: str) -> list[Any]:
    """Sort key that orders numbers by value: ``data.seed=9`` before ``data.seed=10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.io import config_hash
    from xurs_pipeline.reporting.render import write_table
    from xurs_pipeline.reporting.swap_sweep import rendered, sweep_spec, sweep_table

    studies: dict[str, Any] = {}
    if args.source or not args.project:
        show = read_saved(args.source) if args.source else exp_show_json(all_commits=args.all_commits)
        studies, left_out = experiment_studies(show, args.label)
        for name, why in left_out.items():
            print(f"left out {name}: {why}", file=sys.stderr)
    for column, study in project_studies(args.project, args.label).items():
        studies[_unique(column, column, studies)] = study
    if not studies:
        raise ValueError("no experiment has a swap study; run e.g. `xurs sweep --stage swap "
                         "experiment=controlled_swap data.seed=5,6`")  # fmt: skip
    studies = dict(sorted(studies.items(), key=lambda item: natural_key(item[0])))
    frame = rendered(sweep_table(studies))
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is a file, not a directory")
    spec = sweep_spec(list(studies))
    spec = spec if args.overwrite else replace(spec, name=free_stem(out, spec.name))
    title = f"swap sweep ({len(studies)} experiments)"
    paths = write_table(frame, spec, out, title, config_hash(sorted(studies)))
    print(paths[0].read_text(), end="")
    print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0
