"""DVC stage ``tables``: every evaluation artifact -> ``<results>/tables`` (Markdown, LaTeX, CSV) and
``<results>/plots`` (PNG). Numbers come from artifacts only; each table names the experiment and the
hash of the composed config (``params.yaml``) that produced it. Same as ``xurs tables``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from stages._common import log, run_stage
from xurs_pipeline.config import RootConfig, configuration_label
from xurs_pipeline.io import ArtifactError
from xurs_pipeline.reporting.build_tables import build_tables


def body(cfg: RootConfig) -> None:
    try:
        index = build_tables(
            Path(cfg.paths.artifacts), Path(cfg.paths.results), asdict(cfg), configuration_label(cfg)
        )
    except (ArtifactError, KeyError, ValueError) as err:
        log.error("tables: %s", err)
        raise SystemExit(1) from err
    log.info("tables: wrote %s; plots %s; skipped %s", sorted(index["tables"]), index["plots"],
             sorted(index["skipped"]))  # fmt: skip


if __name__ == "__main__":
    run_stage("tables", body)
