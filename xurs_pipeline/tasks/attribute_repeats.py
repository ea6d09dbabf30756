"""Task ``attribute_repeats``: the main attribution run repeated with each seed of
``evaluation.repeat_seeds`` (and ``evaluation.repeat_n_samples`` samples, 0 = the main run's; IG runs
with twice the quadrature points instead, see :func:`repeat_config`) ->
``<artifacts>/repeats/seed<s>/`` (the attribute stage's files, without the resume parts) and
``<artifacts>/repeats/index.json``. App. B.3 repeats the calculation with seeds 17 and 23; ``checks``
compares each repeat with the main run (Tables 2, 6 and 7). With no seeds it writes only the index.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from xurs_pipeline.config import ConfigError, RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.tasks.attribute import attribute_variants


def repeat_name(seed: int) -> str:
    return f"seed{seed}"


def repeat_dir(cfg: RootConfig, seed: int) -> Path:
    return artifact("repeats").at(cfg.paths) / repeat_name(seed)


def repeat_config(cfg: RootConfig, seed: int) -> RootConfig:
    """The main run's config with the repeat's attribution seed and sample count. IG draws nothing at
    random, so a repeat with another seed alone would equal the main run (a check that cannot fail): an IG
    repeat starts from ``repeat_n_samples`` quadrature points, by default twice the main run's (App. B.3:
    "different sample counts"; Sec. 5.3: "increase the number of intermediate points"); a kronrod repeat
    starts from twice the main run's intervals."""
    at, ev = cfg.attribution, cfg.evaluation
    if at.method == "ig":
        points = ev.repeat_n_samples or 2 * at.ig_points
        if points == at.ig_points:
            raise ConfigError(
                f"evaluation.repeat_n_samples={points} equals attribution.ig_points: an IG repeat with the "
                "same points would equal the main run; choose another count"
            )
        ig = dataclasses.replace(at, seed=seed, ig_points=points, ig_max_points=max(at.ig_max_points, points))
        return dataclasses.replace(cfg, attribution=ig)
    if at.method == "kronrod":  # deterministic too: the repeat starts from twice the intervals (other nodes)
        intervals = 2 * at.kronrod_intervals
        budget = max(at.kronrod_max_evals, 15 * intervals * at.refs_per_collection)  # at least the first pass
        kronrod = dataclasses.replace(at, seed=seed, kronrod_intervals=intervals, kronrod_max_evals=budget)
        return dataclasses.replace(cfg, attribution=kronrod)
    n_samples = ev.repeat_n_samples or at.n_samples
    if seed == at.seed and n_samples == at.n_samples:
        raise ConfigError(
            f"evaluation.repeat_seeds contains attribution.seed={seed} with the same sample count: that "
            "repeat would equal the main run; choose another seed or evaluation.repeat_n_samples"
        )
    return dataclasses.replace(cfg, attribution=dataclasses.replace(at, seed=seed, n_samples=n_samples))


def run(cfg: RootConfig) -> None:
    variants = {repeat_name(s): repeat_config(cfg, s) for s in cfg.evaluation.repeat_seeds}
    attribute_variants(artifact("repeats").at(cfg.paths), variants, "repeats")
