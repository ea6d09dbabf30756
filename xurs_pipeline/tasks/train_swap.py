"""Task ``train_swap``: the swap control's models B and C -> ``<artifacts>/swap/train/<model>/classifier/``
and ``train_metrics.json``: the ``train`` stage's run (same config, features from the same cache: the texts
are the same) on the prepared two-cue prompts as each model's labels follow them (``roles.Role.relabel``:
B, relabelled by cue 2; C, the texts whose cues agree). Model A is the ``train`` stage's own classifier
(labels follow cue 1). On other data it writes only ``train_metrics.json`` saying it was skipped, so other
experiments pay nothing."""

from __future__ import annotations

from pathlib import Path

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.evaluation.swap.roles import ROLES, SWAP_ROLES, skipped_reason
from xurs_pipeline.io import write_json
from xurs_pipeline.runs.training import fit_into, training_run
from xurs_pipeline.tasks.runner import log


def run(cfg: RootConfig) -> None:
    out = artifact("swap_model").at(cfg.paths)
    reason = skipped_reason(cfg.data.source)
    if reason is not None:
        write_json({"skipped": reason}, out / Path(artifact("train_metrics").path).name)
        log.info("train_swap: skipped (%s)", reason)
        return
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    for name in SWAP_ROLES:  # a model with no text to learn from is refused before any model trains
        ROLES[name].relabel(prompts)
    for name in SWAP_ROLES:
        role = ROLES[name]
        log.info("train_swap: model %s (labels: %s)", name, role.labels)
        run = training_run(
            cfg, init_head_from=cfg.train.init_head_from or None, relabel=role.relabel, variant=role.labels
        )
        fit_into(run, out / name)
