"""Task ``attribute``: trained classifier + prepared prompts -> ``<artifacts>/attribute/``:

- ``attributions.parquet`` (schema ``attributions``): one row per explained (record_id, target option);
- ``coords/<coords_file>``: coordinate-level attributions e (L, d) per row (safetensors);
- ``nonfinite.json``: questions whose widths or gradients were not finite (never written as numbers);
- ``metrics.json``: rows, residual median/max (Eq. 9), gradient evaluations.

Finished questions are kept in ``<artifacts>/attribute/parts/`` (not a DVC output) so an interrupted run
resumes; they are keyed by the config, the SHA-256 of the classifier and prompts and the code version,
so a changed input recomputes them. Several processes split the questions:
``torchrun --nproc_per_node N -m stages attribute`` (or ``accelerate launch -m stages attribute``);
process 0 merges (:func:`xurs_pipeline.runs.attribution.attribute_into`).
"""

from __future__ import annotations

from typing import Any

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.reporting.headline import attribute_headline
from xurs_pipeline.runs.attribution import attribute_into, attribution_run


def run(cfg: RootConfig) -> dict[str, Any] | None:
    metrics = attribute_into(attribution_run(cfg), artifact("attributions").at(cfg.paths).parent)
    return None if metrics is None else attribute_headline(metrics)
