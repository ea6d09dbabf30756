"""``xurs tables``: rebuild the paper tables and plots of an experiment from its artifacts."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from xurs_pipeline.config import RootConfig, configuration_label, load_params


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tables",
        help="rebuild the paper tables and plots from artifacts",
        description=(
            "Write the paper's tables (1 zero-masking effects, 2 numerical checks, 3 reference endpoints, "
            "4-5 settings, 8 correction, 9 clue localisation, 10 fit errors, accuracy/AUROC, "
            "controlled-model gates, verdicts) as Markdown, LaTeX and CSV under <paths.results>/tables, "
            "and the plots under <paths.results>/plots, "
            "from the artifacts of the experiment in params.yaml. Same as the `tables` stage of `dvc repro`."
        ),
    )
    p.add_argument("--params", default="params.yaml", help="composed config (default: params.yaml)")
    p.set_defaults(run=lambda args: run(load_params(args.params)))


def run(cfg: RootConfig) -> int:
    """Build the tables of ``cfg``'s experiment; returns 0 (errors raise)."""
    from xurs_pipeline.reporting.build_tables import build_tables

    index = build_tables(
        Path(cfg.paths.artifacts), Path(cfg.paths.results), asdict(cfg), configuration_label(cfg)
    )
    print(f"tables: {', '.join(sorted(index['tables']))} -> {cfg.paths.results}/tables")
    for name, why in sorted(index["skipped"].items()):
        print(f"  skipped {name}: {why}")
    return 0
