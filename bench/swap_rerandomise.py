"""The swap study of a finished ``controlled_swap`` project again, with other randomised models: only the two
randomised attribution runs and the ``swap`` stage are recomputed, in a hard-linked copy of the project.

    python bench/swap_rerandomise.py PROJECT COPY --scope tuned

``dvc repro`` after ``evaluation.swap_randomise=tuned`` would also re-attribute model B (DVC reruns the whole
``attribute_swap`` stage), whose explanations do not depend on the key. The copy shares every file with
PROJECT except the ones recomputed (removed from the copy first, so PROJECT is never written;
``bench/swap_rerun.py`` reruns whole stages the same way); its
``data/swap/study/summary.json`` then reads with ``bench/swap_table.py COPY``. docs/swap-control.md's
"heads and tuned blocks" rows are this script's output.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from swap_rerun import linked_copy, remove_outputs

from xurs_pipeline.contracts import artifact
from xurs_pipeline.evaluation.config import SWAP_RANDOMISE
from xurs_pipeline.evaluation.swap import SWAP_RUNS
from xurs_pipeline.tasks import attribute_swap, swap
from xurs_pipeline.tasks.runner import run_task


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("project", type=Path, help="a project where controlled_swap ran to the swap stage")
    parser.add_argument("copy", type=Path, help="where the hard-linked copy goes (must not exist)")
    parser.add_argument("--scope", choices=SWAP_RANDOMISE, default="tuned", help="evaluation.swap_randomise")
    args = parser.parse_args()
    cfg = linked_copy(args.project, args.copy, {"evaluation.swap_randomise": args.scope})
    randomised = [name for name, (_, is_random) in SWAP_RUNS.items() if is_random]
    remove_outputs([artifact("swap_attributions").at(cfg.paths) / n for n in randomised] + [
        artifact("swap_study").at(cfg.paths),
        artifact("swap_headline").at(cfg.paths),
    ])  # fmt: skip
    blocks = attribute_swap.randomised_blocks(cfg)
    for name in randomised:
        attribute_swap.attribute_run(cfg, name, blocks)
    print(run_task("swap", swap.run, cfg))


if __name__ == "__main__":
    main()
