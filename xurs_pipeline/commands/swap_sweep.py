"""``xurs swap-sweep``: compare attribution methods on the swap control across DVC experiments (seeds).

Compare the attribution methods of the two-cue swap control (docs/swap-control.md) across experiments, e.g.
held-out data seeds, each a DVC experiment run up to the `swap` stage:

  xurs sweep --stage swap experiment=controlled_swap data.seed=5,6,7,8,9
  xurs swap-sweep --label data.seed

This command reads `dvc exp show --json` (run here, or a saved copy with --from FILE) and each experiment's
swap study (<paths.artifacts>/swap/study/summary.json) through DVC at the experiment's revision (dvc.api),
only where the experiment ran the swap stage under its own params (one stopped before it keeps its baseline's
dvc.lock entry, which is not its result), or with --project DIR the studies of projects run elsewhere (a
cluster, `run_pipeline`). It writes one row per method: the behavioural agreement on the clear probes per
experiment (k/n), and pooled over the experiments the training-rule swap accuracy, the agreement on all
decided and on the clear probes with Wilson 95% intervals (descriptions); then how often each model behaves
as trained. The table, with the hash of what it pooled (each study's params, summary and faithfulness rows),
goes to <out>/swap_sweep.{md,tex,csv,json} (or the first free swap_sweep_<n>.*; --overwrite replaces it) and
the Markdown is printed; <out>/swap_sweep.png draws each method's pooled agreement on the clear probes with
its interval beside the plan's marks (reporting/swap_plot.py; not drawn where no study has faithfulness rows).
Beside the table, <out>/swap_sweep.inputs/ keeps what it pooled, one small JSON file per study
(reporting/swap_sweep_inputs.py): `xurs swap-sweep --kept <out>/swap_sweep.inputs` rebuilds the same table
from them with no DVC cache (the kept example: results/sweeps/swap_example/swap_sweep.inputs). The verdict is
the analysis plan's (docs/swap-plan.md) on the pooled ledger (evaluation/swap/pooled.py): per method passes,
fails or no verdict and its weakest (model, cue order) cell on the judging yardsticks; the .json holds that
study in full, with every reason. Studies judged under another plan are refused. Experiments without a swap
study of their own (queued, running or interrupted, failed, stopped before the swap stage) are listed on
stderr. Every study, whatever its source (an experiment, --project, --kept), meets the same checks
(swap_sweep_checks.py), each refusal one line naming the file: one study given twice (the same directory, or
the same counts and faithfulness rows), two kept studies of one column, studies that differ in a key that can
change a result (experiment_name, data.* with data.swap_order, model.*, train.*, attribution.*, evaluation.*;
not a progress bar or a device) unless --label names the key, counts that are not counts (k > n, negative,
text, missing), faithfulness rows missing a column or of another type. --label data.seed names each column by
that param (data.seed=6) instead of the experiment's or directory's name; an unknown key is refused.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.commands.args import command
from xurs_pipeline.commands.gates_sweep import free_stem
from xurs_pipeline.commands.swap_sweep_checks import check_studies, read_kept, study_error
from xurs_pipeline.contracts import swap_summary
from xurs_pipeline.evaluation.verdicts import json_safe
from xurs_pipeline.experiments.files import experiment_json, outputs
from xurs_pipeline.experiments.lock import load_yaml, not_run, read_lock, writer
from xurs_pipeline.experiments.pooling import Source, pooled, pooled_hash
from xurs_pipeline.experiments.show import WORKSPACE, Experiment, flatten, parse_json, shown


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="source", metavar="FILE", help="saved `dvc exp show --json` output")
    p.add_argument("-A", "--all-commits", action="store_true", help="experiments of every commit")
    p.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="DIR",
        help="a project directory whose swap study (under its params.yaml's paths.artifacts) to include "
        "(repeatable); with it alone, DVC is not asked",
    )
    p.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY",
        help="name each column by this param, e.g. data.seed (repeatable); the settings the sources must "
        "share may differ in these keys",
    )
    p.add_argument(
        "--kept",
        metavar="DIR",
        help="rebuild from the studies a sweep kept (<out>/swap_sweep.inputs); DVC is not asked",
    )
    p.add_argument("--out", default="results/sweeps", help="output directory (default: results/sweeps)")
    p.add_argument(
        "--overwrite", action="store_true", help="replace an existing swap_sweep.{md,tex,csv,json,inputs}"
    )


def parquet_bytes(data: bytes, where: str) -> pd.DataFrame:
    """A Parquet file's bytes as a frame; ValueError naming ``where``."""
    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as err:  # pyarrow raises several kinds for a file that is not Parquet
        raise ValueError(f"{where}: not a Parquet file ({err})") from err


def faithfulness_rows(summary_path: str) -> str:
    """Where the swap stage writes ``faithfulness.parquet``: beside ``summary.json``."""
    return (Path(summary_path).parent / "faithfulness.parquet").as_posix()


def experiment_sources(exps: list[Experiment]) -> tuple[list[Source], dict[str, str], dict[str, Any]]:
    """The swap study of each experiment that ran the swap stage under its own params; name -> why not of
    the others; ``where`` -> its faithfulness rows (none where the experiment has none: an older stage)."""
    found, left_out = outputs(exps, swap_summary)
    sources, rows = [], {}
    for exp, study in found:
        why = study_error(study)
        if why:
            left_out[exp.name] = f"swap summary: {why}"
            continue
        source = Source(exp.name, f"experiment {exp.name}", exp.rev, exp.params, study)
        paths = {root: exp.params.get(f"paths.{root}") for root in ("artifacts", "results")}
        rows[source.where] = experiment_json(
            exp, faithfulness_rows(str(swap_summary(paths))), ".", parquet_bytes
        )[0]
        sources.append(source)
    return sources, left_out, rows


def project_source(project: str) -> Source:
    """The swap study of a project directory run elsewhere (its ``params.yaml`` names where; where it has a
    ``dvc.lock``, the swap stage must have run under that params.yaml); ValueError naming the directory."""
    root, flag = Path(project), f"--project {project}"
    if not (root / "params.yaml").is_file():
        raise ValueError(
            f"{flag}: no params.yaml (a project directory holds the params its study was made with)"
        )
    params = flatten(load_yaml(_text(root / "params.yaml", flag)) or {})
    paths = {r: root / str(params.get(f"paths.{r}", "")) for r in ("artifacts", "results")}
    path = swap_summary(paths)
    if not path.is_file():
        raise ValueError(f"{flag}: {path} not found (run the swap stage there first)")
    if (root / "dvc.lock").is_file():
        lock = read_lock(WORKSPACE, root)
        stage = writer(lock, swap_summary({r: params.get(f"paths.{r}") for r in paths}).as_posix())
        why = not_run(lock, params, stage) if stage else ""
        if why:
            raise ValueError(
                f"{flag}: {path} is not made with its params.yaml ({why}); run `dvc repro swap` there"
            )
    study = parse_json(_text(path, flag), str(path))
    why = study_error(study)
    if why:
        raise ValueError(f"{flag}: {path}: {why}")
    return Source(root.resolve().name, flag, str(root.resolve()), params, study)


def _text(path: Path, flag: str) -> str:
    """A file's UTF-8 text; ValueError naming ``flag`` and the file where it is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{flag}: {path}: not UTF-8 text (byte offset {err.start})") from None


def project_rows(source: Source) -> pd.DataFrame | None:
    """A project's faithfulness rows beside its summary (None where its swap stage wrote none)."""
    params = {
        r: Path(source.identity) / str(source.params.get(f"paths.{r}", "")) for r in ("artifacts", "results")
    }
    path = Path(faithfulness_rows(str(swap_summary(params))))
    return parquet_bytes(path.read_bytes(), str(path)) if path.is_file() else None


def natural_key(name: str) -> list[Any]:
    """Sort key that orders numbers by value: ``data.seed=9`` before ``data.seed=10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def gathered(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every study to pool in its kept form (``swap_sweep_inputs.kept``), columns in natural order: from
    ``--kept``, or from the experiments and ``--project`` directories; refusing, whatever the source, what
    cannot be pooled (``swap_sweep_checks.check_studies``)."""
    from xurs_pipeline.reporting.swap_sweep_inputs import kept

    if args.kept:
        if args.source or args.project or args.label or args.all_commits:
            raise ValueError(
                "--kept rebuilds a table from its kept studies alone (their columns are named); "
                "give it without --from, --project, --label or -A"
            )
        return read_kept(args.kept)
    sources: list[Source] = []
    rows: dict[str, Any] = {}
    if args.source or not args.project:
        sources, left_out, rows = experiment_sources(shown(args.source, args.all_commits))
        for name, why in left_out.items():
            print(f"left out {name}: {why}", file=sys.stderr)
    for project in args.project:
        sources.append(project_source(project))
        rows[sources[-1].where] = project_rows(sources[-1])
    if not sources:
        raise ValueError(
            "no experiment has a swap study of its own; run e.g. `xurs sweep --stage swap "
            "experiment=controlled_swap data.seed=5,6`"
        )
    columns = sorted(pooled(sources, args.label).items(), key=lambda item: natural_key(item[0]))
    studies = [kept(column, s.where, s.params, s.content, rows.get(s.where)) for column, s in columns]
    check_studies(studies, [s.where for _, s in columns], args.label)
    return studies


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.evaluation.swap.pooled import pooled_faithfulness
    from xurs_pipeline.io import write_json
    from xurs_pipeline.reporting.render import write_table
    from xurs_pipeline.reporting.swap_plot import agreement_plot
    from xurs_pipeline.reporting.swap_sweep import rendered, sweep_spec, sweep_table, with_faithfulness
    from xurs_pipeline.reporting.swap_sweep_inputs import faithfulness_inputs, write_kept

    kept = gathered(args)
    studies = {study["column"]: study["summary"] for study in kept}
    inputs = faithfulness_inputs(kept)
    faithful = pooled_faithfulness(inputs) if inputs else None
    frame = rendered(with_faithfulness(sweep_table(studies), faithful))
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is a file, not a directory")
    spec = sweep_spec(list(studies))
    suffixes = (".md", ".tex", ".csv", ".json", ".inputs", ".png")
    spec = spec if args.overwrite else replace(spec, name=free_stem(out, spec.name, suffixes))
    title = f"swap sweep ({len(studies)} experiments)"
    digest = pooled_hash(
        {s["column"]: {k: s[k] for k in ("params", "summary", "faithfulness_rows")} for s in kept}
    )
    paths = write_table(frame, spec, out, title, digest)
    table = {
        "title": title,
        "hash": digest,
        "rows": json_safe(frame.to_dict(orient="records")),
        "faithfulness": json_safe(faithful),
    }
    paths.append(write_json(table, out / f"{spec.name}.json"))
    paths.append(write_kept(out / f"{spec.name}.inputs", kept))
    paths += [p for p in [agreement_plot(faithful, len(studies), out / f"{spec.name}.png")] if p]
    print(paths[0].read_text(), end="")
    print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0
