"""Task ``attribute``: trained classifier + prepared prompts -> ``<artifacts>/attribute/``:

- ``attributions.parquet`` (schema ``attributions``): one row per explained (record_id, target option);
- ``coords/<coords_file>``: coordinate-level attributions e (L, d) per row (safetensors);
- ``nonfinite.json``: questions whose widths or gradients were not finite (never written as numbers);
- ``metrics.json``: rows, residual median/max (Eq. 9), gradient evaluations, the questions whose budget ran
  out (each with the R it reached) and, with a rerun, App. B.4's vector figures against it;
- ``rerun/``: with ``attribution.certified_rerun`` (``certified`` only) every question estimated again
  with other shifts (``rerun/seed<s>/``, the same files; :func:`xurs_pipeline.config.rerun_config`), and
  ``rerun/index.json`` (alone without a rerun);
- ``rerun_vectors.parquet`` (schema ``rerun_vectors``): per explained answer the cosine and relative
  distance of its vector against the rerun's (``evaluation/vector_stability.py``; empty without a rerun).

Finished questions are kept in ``<artifacts>/attribute/parts/`` (not a DVC output) so an interrupted run
resumes; they are keyed by the config, the SHA-256 of the classifier and prompts and the code version,
so a changed input recomputes them. Several processes split the questions:
``torchrun --nproc_per_node N -m stages attribute`` (or ``accelerate launch -m stages attribute``);
process 0 merges (:func:`xurs_pipeline.runs.attribution.attribute_into`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.attribution.runner import METRICS_FILE
from xurs_pipeline.config import RootConfig, attribution_fingerprint, rerun_config
from xurs_pipeline.contracts import RERUN_VECTOR_COLUMNS, artifact
from xurs_pipeline.evaluation.artifacts import read_prompts
from xurs_pipeline.evaluation.vector_stability import rerun_vectors, vector_metrics
from xurs_pipeline.io import Provenance, read_json, write_json, write_parquet
from xurs_pipeline.reporting.headline import attribute_headline
from xurs_pipeline.runs.attribution import attribute_into, attribute_variants, attribution_run

EMPTY_TYPES = {"record_id": str, "target": int, "cosine": float, "relative_distance": float}


def run(cfg: RootConfig) -> dict[str, Any] | None:
    out = artifact("attributions").at(cfg.paths).parent
    metrics = attribute_into(attribution_run(cfg), out)
    rerun = _rerun(cfg)  # every process: the rerun's questions are sharded too
    if metrics is None:
        return None
    vectors = pd.DataFrame(columns=list(RERUN_VECTOR_COLUMNS)).astype(EMPTY_TYPES)
    if rerun is not None:
        vectors = rerun_vectors(out, rerun, read_prompts(artifact("prompts").at(cfg.paths)))
        metrics |= vector_metrics(vectors)
        metrics["rerun_grad_evals"] = read_json(rerun / METRICS_FILE)["grad_evals"]  # the rerun's cost
        detail = artifact("attribution_metrics")
        write_json(metrics, detail.at(cfg.paths), detail.provenance(attribution_fingerprint(cfg)))
    table = artifact("rerun_vectors")
    write_parquet(vectors, table.at(cfg.paths), table.provenance(attribution_fingerprint(cfg)), table.columns)
    return attribute_headline(metrics)


def _rerun(cfg: RootConfig) -> Path | None:
    """The rerun ``attribution.certified_rerun`` asks for, attributed into ``rerun/seed<s>/`` (its
    directory), or None; ``rerun/index.json`` either way."""
    again = rerun_config(cfg)
    runs = {} if again is None else {f"seed{again.attribution.seed}": attribution_run(again)}
    folder = artifact("attribute_rerun").at(cfg.paths)
    attribute_variants(folder, runs, "rerun", Provenance("attribute_rerun", 1, attribution_fingerprint(cfg)))
    return None if again is None else folder / next(iter(runs))
