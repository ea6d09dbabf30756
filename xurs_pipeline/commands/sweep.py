"""``xurs sweep``: Hydra multirun of whole experiments, one DVC experiment each.

Expand Hydra sweep overrides (e.g. experiment=smoke train.seed=7,17) and run the whole pipeline once per
point as its own DVC experiment (dvc exp run --temp -S ...). Any Hydra launcher works: add
hydra/launcher=joblib (local, parallel) or hydra/launcher=submitit_slurm hydra.launcher.partition=<p>
(SLURM).

Every point is composed and validated before any runs (all refusals listed at once; a point composing the
same config as an earlier one is refused, it would run twice), and --name must make experiment names
(letters, digits, _ . + -); each point then runs in a temporary copy, saved as its own DVC experiment, and
the sweep ends with one line per point. `dvc exp run` composes the config directory DVC is configured with
(hydra.config_dir, default conf), so --conf must name that one. Experiment names that exist already stop
the sweep before it starts, unless --resume (skip those points) or --overwrite (rerun them with `dvc exp
run -f`). Ctrl-C lets the running point's `dvc exp run` end its run and clean up (nothing stays "running"
in `dvc exp show`), runs no later point, prints each point's outcome and exits with status 130.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from xurs_pipeline.commands.args import command
from xurs_pipeline.config import ConfigError, compose, validate
from xurs_pipeline.contracts import STAGES
from xurs_pipeline.errors import XursError
from xurs_pipeline.io import config_hash

POINT_FILE = "point.json"  # each job's outcome, in its Hydra output directory
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
INTERRUPTED = "interrupted (Ctrl-C; DVC ended the run and kept nothing of it)"
NOT_RUN = "not run (the sweep was interrupted before it)"
REF_BYTES = 255  # a git ref's last part is a file name: at most 255 bytes (DVC keeps each experiment as one)
WAIT_S = 30  # how long an interrupted `dvc exp run` may take to clean up before it is stopped


class SweepError(XursError, ValueError):
    """A sweep that cannot run as asked (a refused point, a missing stage, an existing name)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run)
    p.add_argument("overrides", nargs="+", help="Hydra overrides and sweeps, e.g. train.seed=7,17")
    p.add_argument("--conf", default="", help="config directory (default: DVC's hydra.config_dir, conf)")
    p.add_argument("--name", default="sweep", help="experiment name prefix (default: sweep)")
    p.add_argument("--stage", default="", help="run each point up to this stage only (e.g. predict)")
    p.add_argument("--dry-run", action="store_true", help="print each job's dvc command, run nothing")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true", help="skip points whose experiment exists already")
    again.add_argument("--overwrite", action="store_true", help="rerun points whose experiment exists")


def dvc_command(name: str, overrides: list[str], stage: str = "", force: bool = False) -> list[str]:
    """The command that runs one sweep point (up to ``stage``, default every stage) as a DVC experiment;
    DVC's Hydra integration composes conf/ with the overrides. ``force``: replace an existing experiment."""
    dvc = shutil.which("dvc") or "dvc"
    target = [stage] if stage else []
    again = ["-f"] if force else []
    return [
        dvc,
        "exp",
        "run",
        *target,
        "--temp",
        *again,
        "-n",
        name,
        *[a for o in overrides for a in ("-S", o)],
    ]


def config_dir(project: Path, asked: str) -> Path:
    """The directory ``dvc exp run`` composes (DVC's ``hydra.config_dir``; ``conf`` outside a DVC project);
    ``asked`` (``--conf``) must be that one, or the points would run another config than was checked."""
    dvc_dir = project / ".dvc"
    hydra: dict = {}
    if dvc_dir.is_dir():
        from dvc.config import Config

        hydra = dict(Config(dvc_dir=str(dvc_dir)).get("hydra", {}))
        if not hydra.get("enabled") or hydra.get("config_module"):
            raise SweepError(
                f"{dvc_dir / 'config'}: DVC's Hydra integration is off (hydra.enabled) or set to a module, "
                "so `dvc exp run -S` would not compose a config directory; `dvc config hydra.enabled true`"
            )
    dvc_conf = (project / hydra.get("config_dir", "conf")).resolve()
    conf = (project / asked).resolve() if asked else dvc_conf
    if conf != dvc_conf:
        raise SweepError(
            f"--conf {asked}: `dvc exp run` composes {dvc_conf} (DVC's hydra.config_dir), not {conf}, so "
            f"the points would not run the config checked here; run `dvc config --local hydra.config_dir "
            f"{asked}` first, or sweep without --conf"
        )
    if not (conf / "config.yaml").is_file():
        raise SweepError(f"{conf / 'config.yaml'}: not found; run xurs sweep from the project root")
    return conf


def check_stage(stage: str) -> None:
    """``--stage`` must name a stage of the pipeline (with the closest one suggested)."""
    if stage and stage not in STAGES:
        close = difflib.get_close_matches(stage, list(STAGES), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"the stages: {', '.join(STAGES)}"
        raise SweepError(f"--stage {stage!r}: no such stage; {hint}")


def expand(overrides: list[str]) -> list[list[str]]:
    """Every point of the sweep, in Hydra's basic sweeper's order (the job numbers), without the
    ``hydra...`` overrides (the launcher's, not the experiment's)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as err:
        raise SweepError(f"overrides {overrides}: {str(err).splitlines()[0]}") from err
    own = [o for o in parsed if not o.get_key_element().lstrip("~+").startswith("hydra")]
    (batch,) = BasicSweeper.split_arguments(own, None) or [[[]]]
    return [list(point) for point in batch]


def check_points(points: list[list[str]], conf: Path) -> None:
    """Compose and validate every point before any runs; refuse the sweep listing each refused point, and
    a point that composes the same config as an earlier one (``train.seed=7,7``: it would run twice)."""
    refused, seen = [], {}
    for number, point in enumerate(points):
        try:
            composed = compose(point, conf_dir=conf)
            validate(composed, source=f"sweep point {number} {point}")
        except ConfigError as err:
            refused.append(str(err))
            continue
        first = seen.setdefault(config_hash(composed), number)
        if first != number:
            refused.append(f"sweep point {number} {point}: the same config as point {first} {points[first]}")
    if len(refused) > 1:
        print("\n".join(refused), file=sys.stderr)
        raise SweepError(f"{len(refused)} of {len(points)} points refused (above); nothing was run")
    if refused:
        raise SweepError(f"{refused[0]}; nothing was run")


def check_name(prefix: str, points: int) -> None:
    """``--name`` must make DVC experiment names (a git ref's last part): letters, digits, ``_ . + -``,
    starting with a letter or digit, no ``..``, the longest, ``<prefix>-<points - 1>``, at most
    :data:`REF_BYTES` bytes; checked before any point runs (and in ``--dry-run``), not when each one does."""
    if not NAME.fullmatch(prefix) or ".." in prefix or prefix.endswith(".lock"):
        raise SweepError(
            f"--name {prefix!r}: not an experiment name; use letters, digits and _ . + - (starting with a "
            "letter or digit, no '..'), e.g. --name seeds"
        )
    size = len(f"{prefix}-{points - 1}".encode())
    if size > REF_BYTES:
        raise SweepError(
            f"--name {prefix[:20]}... ({len(prefix.encode())} bytes): point {points - 1}'s name would be "
            f"{size} bytes, above a git ref's {REF_BYTES}; pick a shorter prefix"
        )


def existing_names(project: Path, names: list[str]) -> set[str]:
    """Which of ``names`` are experiments of the current commit already (``dvc exp list``)."""
    if not (project / ".dvc").is_dir():
        return set()
    listed = subprocess.run(
        [shutil.which("dvc") or "dvc", "exp", "list", "--name-only"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    return set(names) & set(listed.stdout.split())


def run(args: argparse.Namespace) -> int:
    project = Path.cwd()
    conf = config_dir(project, args.conf)
    check_stage(args.stage)
    points = expand(args.overrides)
    check_name(args.name, len(points))
    check_points(points, conf)
    names = [f"{args.name}-{number}" for number in range(len(points))]
    existing = existing_names(project, names)
    if existing and not (args.resume or args.overwrite):
        raise SweepError(
            f"experiments {sorted(existing)} exist already: --resume skips those points, --overwrite reruns "
            "them, --name picks another prefix"
        )
    sweep_dir = project / "logs" / "hydra" / "sweep"
    for stale in sweep_dir.glob(f"*/{POINT_FILE}"):
        stale.unlink()  # a log of an earlier sweep, never an output
    interrupted: list[str] = []  # the point a Ctrl-C stopped (launch sets it; the later points do not run)
    stopped = launch(args, project, conf, (existing, interrupted), sweep_dir)
    return report(names, sweep_dir, args.dry_run, bool(interrupted)) or stopped


def run_point(command: list[str], project: Path) -> str:
    """Run one point's ``dvc exp run``; its outcome. DVC runs in its own process group, so a Ctrl-C reaches
    it once, from here: it ends the stage it runs and removes its temporary copy (killed instead, it would
    stay "running" in ``dvc exp show``); then KeyboardInterrupt goes on."""
    process = subprocess.Popen(command, cwd=project, start_new_session=True)
    try:
        done = process.wait()
    except KeyboardInterrupt:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=WAIT_S)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):  # no end in sight, or Ctrl-C again: stop now
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
        raise
    return "finished" if done == 0 else f"failed (exit {done})"


def launch(
    args: argparse.Namespace, project: Path, conf: Path, names: tuple[set[str], list[str]], sweep_dir: Path
) -> int:
    """Run every point with the configured Hydra launcher; each job records its outcome, never raises.
    ``names``: the points' experiments that exist already, and where a Ctrl-C's point is recorded."""
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import DictConfig

    existing, interrupted = names

    @hydra.main(config_path=str(conf), config_name="config", version_base="1.3")
    def job(cfg: DictConfig) -> str:
        hc = HydraConfig.get()
        name = f"{args.name}-{hc.job.num}"
        outcome = NOT_RUN if interrupted else "skipped (exists; --resume)"
        if not (interrupted or (args.resume and name in existing)):
            command = dvc_command(name, list(hc.overrides.task), args.stage, force=name in existing)
            print(" ".join(command), flush=True)
            try:
                outcome = "dry run" if args.dry_run else run_point(command, project)
            except KeyboardInterrupt:
                interrupted.append(name)
                outcome = INTERRUPTED
        (Path(hc.runtime.output_dir) / POINT_FILE).write_text(json.dumps({"name": name, "outcome": outcome}))
        return name

    argv = sys.argv
    sys.argv = [
        "xurs-sweep",
        "-m",
        *args.overrides,
        "hydra.job.chdir=False",
        f"hydra.sweep.dir={sweep_dir}",
        "hydra.sweep.subdir=${hydra.job.num}",
    ]
    try:
        job()
    except KeyboardInterrupt:  # between two points: the launcher's own work
        interrupted.append("")
    except SystemExit as stop:  # Hydra reports a failed launch (a launcher error) and exits
        if stop.code:
            print(f"xurs sweep: the launcher stopped (see above): {args.overrides}", file=sys.stderr)
            return 2
    finally:
        sys.argv = argv
    return 0


def report(names: list[str], sweep_dir: Path, dry_run: bool, interrupted: bool = False) -> int:
    """One line per point (its experiment and outcome); 2 when any point did not finish, 130 (as a shell
    reports Ctrl-C) when the sweep was interrupted."""
    outcomes = {}
    for path in sweep_dir.glob(f"*/{POINT_FILE}"):
        point = json.loads(path.read_text())
        outcomes[point["name"]] = point["outcome"]
    missing = NOT_RUN if interrupted else "no outcome (the launcher did not run it)"
    lines = [f"  {name}: {outcomes.get(name, missing)}" for name in names]
    failed = [
        name
        for name in names
        if outcomes.get(name) not in ("finished", "dry run", "skipped (exists; --resume)")
    ]
    print("sweep points:\n" + "\n".join(lines))
    if interrupted:
        print(
            f"xurs sweep: interrupted; {len(names) - len(failed)} of {len(names)} points finished",
            file=sys.stderr,
        )
        return 130
    if failed:
        print(
            f"xurs sweep: {len(failed)} of {len(names)} points did not finish: {', '.join(failed)}",
            file=sys.stderr,
        )
        return 2
    if not dry_run:
        print("sweep finished: `dvc exp show` lists its experiments")
    return 0
