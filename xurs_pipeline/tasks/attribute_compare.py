"""Task ``attribute_compare``: the main attribution run's questions explained with
``evaluation.compare_method`` as well (same classifier, prompts, selection and reference settings; the
method's own keys at their defaults) -> ``<artifacts>/compare/<method>/`` (the ``attribute`` stage's
format) and ``<artifacts>/compare/index.json`` (empty without a second method). The report shows both
methods side by side on each question page (``reporting/build_report.with_comparison``).
"""

from __future__ import annotations

from xurs_pipeline.attribution.from_artifacts import attribute_variants
from xurs_pipeline.config import RootConfig, compare_config
from xurs_pipeline.contracts import artifact
from xurs_pipeline.runs import attribution_run


def run(cfg: RootConfig) -> None:
    other = compare_config(cfg)
    runs = {} if other is None else {other.attribution.method: attribution_run(other)}
    attribute_variants(artifact("compare_runs").at(cfg.paths), runs, "compare")
