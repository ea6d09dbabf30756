"""Task ``tables``: every evaluation artifact -> ``<results>/tables`` (Markdown, LaTeX, CSV) and
``<results>/plots`` (PNG). Numbers come from artifacts only; each table names the experiment and the
hash of the composed config (``params.yaml``) that produced it. Same as ``xurs tables``.
"""

from __future__ import annotations

from pathlib import Path

from xurs_pipeline.config import RootConfig, configuration_label, result_config


def run(cfg: RootConfig) -> None:
    """Build the tables of ``cfg``'s experiment (errors raise)."""
    from xurs_pipeline.reporting.build_tables import build_tables  # imports torch: not at stage start-up

    index = build_tables(
        Path(cfg.paths.artifacts), Path(cfg.paths.results), result_config(cfg), configuration_label(cfg)
    )
    print(f"tables: {', '.join(sorted(index['tables']))} -> {cfg.paths.results}/tables")
    for name, why in sorted(index["skipped"].items()):
        print(f"  skipped {name}: {why}")
