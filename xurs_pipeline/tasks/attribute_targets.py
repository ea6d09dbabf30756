"""Task ``attribute_targets``: the main attribution run (same engine, references, samples and seed)
for each comparison target function in ``evaluation.targets`` other than ``attribution.target_fn`` ->
``<artifacts>/targets/<fn>/`` and ``<artifacts>/targets/index.json``. ``mask_eval`` zero-masks each and the
``tables`` stage compares them with the width (the comparison the paper leaves to future work, Sec. 7).
"""

from __future__ import annotations

from xurs_pipeline.config import RootConfig, comparison_targets, target_config
from xurs_pipeline.contracts import artifact
from xurs_pipeline.runs.attribution import attribute_variants, attribution_run


def run(cfg: RootConfig) -> None:
    runs = {fn: attribution_run(target_config(cfg, fn)) for fn in comparison_targets(cfg)}
    attribute_variants(artifact("target_runs").at(cfg.paths), runs, "targets")
