"""DVC stage ``report``: artifacts -> ``<results>/html/`` (one explanation page per explained question,
shaded by width attribution, with intervals, masses, section shares and checks; plus ``index.html``).
Same as ``xurs report``.
"""

from __future__ import annotations

from stages._common import log, run_stage
from xurs_pipeline.commands.report import run
from xurs_pipeline.config import RootConfig
from xurs_pipeline.io import ArtifactError


def body(cfg: RootConfig) -> None:
    try:
        run(cfg)
    except (ArtifactError, KeyError, ValueError) as err:
        log.error("report: %s", err)
        raise SystemExit(1) from err


if __name__ == "__main__":
    run_stage("report", body)
