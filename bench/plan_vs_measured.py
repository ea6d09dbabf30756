"""`xurs plan --device local --measure` against measured runs of the `train` and `attribute` stages.

    python bench/plan_vs_measured.py DIR [DIR ...]

Each DIR is a DVC project where `dvc repro predict` has run (so the prepared prompts, the warm-start head
and the backbone exist). For each: the plan (parameters from the config on the meta device, memory
model, per-sample costs timed here), then each stage run once more as a fresh process under
`/usr/bin/time -v` (peak resident memory, wall time). Prints one Markdown row per stage with the ratio
measured / planned and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import _common as C

from xurs_pipeline.config import load_params
from xurs_pipeline.planning.devices import GIB, local_device
from xurs_pipeline.planning.estimate import Shape, plan_stages
from xurs_pipeline.planning.measure import measure_costs
from xurs_pipeline.planning.shapes import backbone_config, count_parameters
from xurs_pipeline.planning.workload import resolve_workload

STAGES = ("train", "attribute")


def measured(project: Path, stage: str) -> tuple[float, float]:
    """(peak RSS bytes, wall seconds) of ``python -m stages <stage>`` in ``project``."""
    env = {**os.environ, "PYTHONPATH": str(project)}
    result = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "stages", stage],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1)) * 1024
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", result.stderr).group(1)
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(clock.split(":"))))
    return rss, seconds


def rows_for(project: Path) -> list[list[object]]:
    os.chdir(project)
    cfg = load_params(project / "params.yaml")
    config = backbone_config(cfg.model)
    counts = count_parameters(config, cfg.model, cfg.train)
    work = resolve_workload(cfg, project)
    device = local_device()
    costs = measure_costs(cfg, config, work.prompt_tokens)
    plans = {p.stage: p for p in plan_stages(cfg, counts, Shape.of(config), device, work, costs)}
    rows = []
    for stage in STAGES:
        load = C.load_average()
        rss, seconds = measured(project, stage)
        plan = plans[stage]
        rows.append(
            [
                f"{cfg.experiment_name} ({config.model_type}, {counts.total / 1e6:.1f} M)",
                stage,
                f"{plan.peak_bytes / GIB:.2f}",
                f"{rss / GIB:.2f}",
                f"{rss / plan.peak_bytes:.2f}",
                f"{plan.seconds:.1f}",
                f"{seconds:.1f}",
                f"{seconds / plan.seconds:.2f}",
                load,
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="+", type=Path)
    args = parser.parse_args()
    rows = [row for project in args.projects for row in rows_for(project.resolve())]
    print(
        C.markdown_table(
            ["run", "stage", "plan GiB", "measured GiB", "ratio", "plan s", "measured s", "ratio", "load"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
