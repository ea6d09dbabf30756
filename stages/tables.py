"""DVC stage ``tables``: every evaluation artifact -> ``<results>/tables`` (Markdown, LaTeX, CSV) and
``<results>/plots`` (PNG). Numbers come from artifacts only; each table names the experiment and the
hash of the composed config (``params.yaml``) that produced it. Same as ``xurs tables``.
"""

from __future__ import annotations

from stages._common import log, run_stage
from xurs_pipeline.commands.tables import run
from xurs_pipeline.config import RootConfig
from xurs_pipeline.io import ArtifactError


def body(cfg: RootConfig) -> None:
    try:
        run(cfg)
    except (ArtifactError, KeyError, ValueError) as err:
        log.error("tables: %s", err)
        raise SystemExit(1) from err


if __name__ == "__main__":
    run_stage("tables", body)
