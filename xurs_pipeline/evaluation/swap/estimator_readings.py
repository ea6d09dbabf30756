"""The paper's estimator rerun on a swap probe from a reference set (``paper@references=R``,
``attribution/variants.py``): the experiment's ``attribution.method`` (eg, ig or kronrod; its quadrature,
path, tolerance and, unless the entry sets it, reduction) through the engine (``question.attribute_paths``),
every reference of R in one collection (App. B.2: their attributions averaged, Eq. 3 and 5), so that the
paper's estimator is read from the same references as every other method.

The set's references are already fitted to the probe's L positions (``probe_references.py``), so they enter
as training prompts fitted by position (nothing is cut or padded), or, for ``zero``, as the zero reference.
kronrod keeps the experiment's budget per reference (``kronrod_max_evals / refs_per_collection``, at least
its first pass), so a set of k references may take k times a reference's evaluations.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from xurs_pipeline.attribution.config import PATH_METHODS, AttributionConfig
from xurs_pipeline.attribution.question import Question, ReferencePool, attribute_paths
from xurs_pipeline.attribution.variants import KEY
from xurs_pipeline.io import ArtifactError

FITTED = -1  # the pad id the engine is given: the rows are fitted already, so it is never read


def estimator_config(cfg: AttributionConfig, references: int | None) -> AttributionConfig:
    """``cfg`` explaining one probe from ``references`` fitted references (None: the zero reference), one
    collection, kronrod's budget per reference kept (module docstring)."""
    if cfg.method not in PATH_METHODS:
        raise ArtifactError(f"paper@{KEY}=...: attribution.method={cfg.method!r} is no path estimator "
                            f"({' / '.join(PATH_METHODS)})")  # fmt: skip
    n = 1 if references is None else references
    per_reference = -(-cfg.kronrod_max_evals // cfg.refs_per_collection)
    kind = {"reference": "zero", "path": "straight"} if references is None else {"reference": "train"}
    return replace(cfg, **kind, reference_alignment="position", n_collections=1, refs_per_collection=n,
                   kronrod_max_evals=max(per_reference, 15 * cfg.kronrod_intervals) * n, max_questions=0,
                   record_ids=[])  # fmt: skip


def estimator_scores(
    classifier: Any, cfg: AttributionConfig, ids: list[int], label: int, rows: np.ndarray | None
) -> tuple[np.ndarray, int, int]:
    """The estimator's token magnitudes (L,) of the label's width (Eq. 2) on the probe ``ids`` from the
    fitted references ``rows`` ((n, L) token ids, or None for zero), its forwards and gradient evaluations."""
    chosen = estimator_config(cfg, None if rows is None else len(rows))
    pool = None
    if rows is not None:
        tokens = [list(map(int, r)) for r in rows]
        pool = ReferencePool([tuple(f"{KEY}#{j}" for j in range(len(tokens)))], [tokens])
        pool = pool.measured(classifier, chosen)
    question = Question("probe", tuple(ids), label)
    result = attribute_paths(classifier, question, pool, chosen, FITTED, targets=(label,))
    if result.failure is not None:
        raise ArtifactError(f"paper@{KEY}=...: {result.failure.message()}")
    row = result.rows[0]
    return np.asarray(row.token_magnitude, dtype=np.float64), int(row.forward_evals), int(row.grad_evals)
