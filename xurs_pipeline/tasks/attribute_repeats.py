"""Task ``attribute_repeats``: the main attribution run repeated with each seed of
``evaluation.repeat_seeds`` (and ``evaluation.repeat_n_samples`` samples, 0 = the main run's; IG runs
with twice the quadrature points instead, see :func:`xurs_pipeline.config.repeat_config`) ->
``<artifacts>/repeats/seed<s>/`` (the attribute stage's files, without the resume parts) and
``<artifacts>/repeats/index.json``. App. B.3 repeats the calculation with seeds 17 and 23; ``checks``
compares each repeat with the main run (Tables 2, 6 and 7). With no seeds it writes only the index.
"""

from __future__ import annotations

from xurs_pipeline.config import RootConfig, repeat_config
from xurs_pipeline.contracts import artifact, repeat_dir
from xurs_pipeline.runs.attribution import attribute_variants, attribution_run


def run(cfg: RootConfig) -> None:
    runs = {
        repeat_dir(cfg.paths, s).name: attribution_run(repeat_config(cfg, s))
        for s in cfg.evaluation.repeat_seeds
    }
    attribute_variants(artifact("repeats").at(cfg.paths), runs, "repeats")
