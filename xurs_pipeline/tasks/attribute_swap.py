"""Task ``attribute_swap``: the swap control's other attributions, each in the ``attribute`` stage's format
under ``<artifacts>/swap/attribute/<run>/``, with the main run's ``attribution.*`` (the same probes, the
same references, the same estimator):

- ``B``, ``C``: models B and C (``train_swap``: labels follow cue 2; labels from the texts whose cues agree);
- ``A_random``, ``B_random``, ``C_random`` (none under ``evaluation.swap_randomise: none``): each model with
  the head re-initialised
  (``evaluation.randomisation.reinitialise(classifier, "head", seed)``, seed ``evaluation.seed`` plus the
  role's offset, so the random heads are different functions); with
  ``evaluation.swap_randomise: tuned`` also the blocks that training tuned (``train.partial_layers``, top
  first, seeds ``seed + 1``, ``seed + 2``, ...), so the models keep only the frozen blocks they share.

Model A's attributions are the ``attribute`` stage's. ``index.json`` lists the runs.
"""

from __future__ import annotations

import shutil
from functools import partial
from typing import Any

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.errors import XursError
from xurs_pipeline.evaluation.randomisation import cascade_names, reinitialise
from xurs_pipeline.evaluation.swap.roles import FIRST_ROLE, RUNS, skipped_reason, study_runs
from xurs_pipeline.io import write_json
from xurs_pipeline.runs.attribution import attribute_into, attribution_run
from xurs_pipeline.tasks.runner import log


def run(cfg: RootConfig) -> None:
    out = artifact("swap_attributions").at(cfg.paths)
    reason = skipped_reason(cfg.data.source)
    if reason is not None:
        write_json({"skipped": reason}, out / "index.json")
        log.info("attribute_swap: skipped (%s)", reason)
        return
    seed = cfg.evaluation.seed
    blocks = randomised_blocks(cfg)
    runs = study_runs(cfg.evaluation.swap_randomise)
    names = [name for name in runs if name != FIRST_ROLE]  # model A's trained run is the attribute stage's
    metrics = {name: attribute_run(cfg, name, blocks) for name in names}
    if any(m is None for m in metrics.values()):
        return  # not the main process
    write_json(
        {
            "runs": {
                n: {
                    "model": RUNS[n].role.name,
                    "head_reinitialised": RUNS[n].randomised,
                    "blocks_reinitialised": blocks if RUNS[n].randomised else 0,
                    "seed": seed + RUNS[n].role.seed_offset,
                }
                for n in metrics
            }
        },
        out / "index.json",
    )


def attribute_run(cfg: RootConfig, name: str, blocks: int) -> dict | None:
    """Swap run ``name`` (``roles.RUNS``) into ``<swap_attributions>/<name>``; a randomised run re-initialises
    the head and the top ``blocks`` blocks. The merged metrics on the main process, else None."""
    role, randomised = RUNS[name].role, RUNS[name].randomised
    log.info("attribute_swap: %s", name)
    seed = cfg.evaluation.seed + role.seed_offset  # each model its own draw: two different random functions
    modify = partial(_randomise, seed=seed, blocks=blocks) if randomised else None
    variant = f"{cfg.evaluation.swap_randomise} reinitialised, seed {seed}" if randomised else ""
    out = artifact("swap_attributions").at(cfg.paths) / name
    run = attribution_run(cfg, role.classifier_dir(cfg.paths), modify=modify, variant=variant)
    metrics = attribute_into(run, out)
    shutil.rmtree(out / "parts", ignore_errors=True)  # no DVC output (as attribute_variants)
    return metrics


def randomised_blocks(cfg: RootConfig) -> int:
    """Top blocks the randomised runs re-initialise besides the head (``evaluation.swap_randomise``)."""
    if cfg.evaluation.swap_randomise in ("head", "none"):
        return 0
    if cfg.train.adaptation != "partial":
        raise XursError(
            f"evaluation.swap_randomise='tuned' re-initialises the blocks that training tuned, but "
            f"train.adaptation={cfg.train.adaptation!r} tunes none; use 'head' or train.adaptation=partial"
        )
    return cfg.train.partial_layers


def _randomise(classifier: Any, seed: int, blocks: int) -> None:
    """Re-initialise the head (seed ``seed``) and the top ``blocks`` blocks (seeds ``seed + 1``, ...)."""
    for step, name in enumerate(cascade_names(classifier, "head", blocks)):
        reinitialise(classifier, name, seed + step)
