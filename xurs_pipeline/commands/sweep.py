"""``xurs sweep``: Hydra multirun of whole experiments, one DVC experiment each.

Expand Hydra sweep overrides (e.g. experiment=smoke train.seed=7,17) and run the whole pipeline once per
point as its own DVC experiment (dvc exp run --temp -S ...). Any Hydra launcher works: add
hydra/launcher=joblib (local, parallel) or hydra/launcher=submitit_slurm hydra.launcher.partition=<p>
(SLURM).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from xurs_pipeline.commands.args import command
from xurs_pipeline.config import validate


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(sub, __doc__, run, overrides=("+", "Hydra overrides and sweeps, e.g. train.seed=7,17"))
    p.add_argument("--name", default="sweep", help="experiment name prefix (default: sweep)")
    p.add_argument("--stage", default="", help="run each point up to this stage only (e.g. predict)")
    p.add_argument("--dry-run", action="store_true", help="print each job's dvc command, run nothing")


def dvc_command(name: str, overrides: list[str], stage: str = "") -> list[str]:
    """The command that runs one sweep point (up to ``stage``, default every stage) as a DVC experiment;
    DVC's Hydra integration composes conf/ with the overrides."""
    dvc = shutil.which("dvc") or "dvc"
    target = [stage] if stage else []
    return [dvc, "exp", "run", *target, "--temp", "-n", name, *[arg for o in overrides for arg in ("-S", o)]]


def run(args: argparse.Namespace) -> int:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import DictConfig

    project = Path.cwd()
    conf = (project / args.conf).resolve()
    if not (conf / "config.yaml").is_file():
        raise FileNotFoundError(f"{conf / 'config.yaml'}: not found; run xurs sweep from the project root")

    @hydra.main(config_path=str(conf), config_name="config", version_base="1.3")
    def job(cfg: DictConfig) -> str:
        hc = HydraConfig.get()
        overrides = list(hc.overrides.task)
        validate(cfg, source=f"sweep point {overrides}")  # before any work, naming the bad key
        name = f"{args.name}-{hc.job.num}"
        command = dvc_command(name, overrides, args.stage)
        print(" ".join(command), flush=True)
        if not args.dry_run:
            subprocess.run(command, cwd=project, check=True)
        return name

    argv = sys.argv
    sys.argv = [
        "xurs-sweep", "-m", *args.overrides, "hydra.job.chdir=False",
        f"hydra.sweep.dir={project / 'logs' / 'hydra' / 'sweep'}", "hydra.sweep.subdir=${hydra.job.num}",
    ]  # fmt: skip
    try:
        job()
    except SystemExit as stop:  # Hydra reports a failed job (e.g. a config error naming its key) and exits
        if stop.code:
            print(f"xurs sweep: stopped at a failed point (see above): {args.overrides}", file=sys.stderr)
            return 2
    finally:
        sys.argv = argv
    if not args.dry_run:
        print("sweep finished: `dvc exp show` lists its experiments")
    return 0
