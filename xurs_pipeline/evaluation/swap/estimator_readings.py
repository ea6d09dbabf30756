"""The paper's estimator rerun on a swap probe from a reference set (``paper@references=R``,
``attribution/variants.py``): the experiment's ``attribution.method`` (eg, ig, kronrod or certified; its
quadrature, path, tolerance and, unless the entry sets it, reduction) through the one call every method
answers (``attribution/methods/``: ``attribute`` on the probe with every reference of R, one collection,
App. B.2: their attributions averaged, Eq. 3 and 5), so that the paper's estimator is read from the same
references as every other method.

The set's references are already fitted to the probe's L positions (``probe_references.py``), so they enter
as they are, or, for ``zero``, as the zero reference on the straight path. kronrod keeps the experiment's
budget per reference (``kronrod_max_evals / refs_per_collection``, at least its first pass), so a set of k
references may take k times a reference's evaluations.
"""

from __future__ import annotations

from dataclasses import replace

from xurs_pipeline.attribution.config import PATH_METHODS, AttributionConfig
from xurs_pipeline.attribution.variants import KEY, ReferenceSet
from xurs_pipeline.io import ArtifactError


def estimator_config(cfg: AttributionConfig, chosen: ReferenceSet) -> AttributionConfig:
    """``cfg`` explaining one probe from the set ``chosen`` (its ``count`` fitted references; ``zero``: the
    zero reference), one collection, kronrod's budget per reference kept (module docstring)."""
    if cfg.method not in PATH_METHODS:
        raise ArtifactError(
            f"paper@{KEY}=...: attribution.method={cfg.method!r} is no path estimator "
            f"({' / '.join(PATH_METHODS)})"
        )
    per_reference = -(-cfg.kronrod_max_evals // cfg.refs_per_collection)
    kind = {"reference": "zero", "path": "straight"} if chosen.kind == "zero" else {"reference": "train"}
    budget = max(per_reference, 15 * cfg.kronrod_intervals) * chosen.count
    return replace(
        cfg,
        **kind,
        reference_alignment="position",
        n_collections=1,
        refs_per_collection=chosen.count,
        kronrod_max_evals=budget,
        max_questions=0,
        record_ids=[],
    )
