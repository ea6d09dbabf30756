"""Task ``attribute``: trained classifier + prepared prompts -> ``<artifacts>/attribute/``:

- ``attributions.parquet`` (schema ``attributions``): one row per explained (record_id, target option);
- ``coords/<coords_file>``: coordinate-level attributions e (L, d) per row (safetensors);
- ``nonfinite.json``: questions whose widths or gradients were not finite (never written as numbers);
- ``metrics.json``: rows, residual median/max (Eq. 9), gradient evaluations.

Finished questions are kept in ``<artifacts>/attribute/parts/`` (not a DVC output) so an interrupted run
resumes; they are keyed by the config, the SHA-256 of the classifier and prompts and the code version,
so a changed input recomputes them. Several processes split the questions:
``torchrun --nproc_per_node N -m stages.attribute`` (or ``accelerate launch -m stages.attribute``);
process 0 merges.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.model import DTYPES, chosen_device, set_precision
from xurs_pipeline.attribution.runner import RunOutput, Shard, input_hashes, run_attribution
from xurs_pipeline.config import RootConfig, attribution_fingerprint, train_run_hash
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.io import write_json
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.processes import process_group
from xurs_pipeline.reporting.headline import attribute_headline
from xurs_pipeline.tasks.runner import log


def attribute_into(
    cfg: RootConfig,
    out_dir: Path,
    classifier_dir: Path | None = None,
    modify: Callable[[torch.nn.Module], None] | None = None,
    variant: str = "",
) -> dict | None:
    """Attribute ``cfg.attribution`` with the trained classifier (or the one in ``classifier_dir``, then
    ``modify``-ed: the swap control's re-initialised heads, a ``variant`` that keys its parts apart) into
    ``out_dir`` (this process's shard); the merged metrics on the main process, else None."""
    at = cfg.attribution
    cpu = chosen_device(at.device).type == "cpu"
    state = process_group(cpu)  # one group of every launched process, or a LaunchError
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    classifier_dir = classifier_dir or artifact("classifier").at(cfg.paths)
    classifier, tokenizer = load_classifier(
        classifier_dir, config_hash=train_run_hash(cfg), merge_lora=at.merge_lora
    )
    if modify is not None:
        modify(classifier)
    classifier.to(device=state.device)
    set_precision(classifier, DTYPES[at.precision])
    max_positions = getattr(classifier.backbone.config, "max_position_embeddings", None)
    metrics = run_attribution(
        classifier, prompts, at, pad_id=tokenizer.pad_token_id, max_positions=max_positions,
        out=RunOutput(out_dir, attribution_fingerprint(cfg), attribution_fingerprint(cfg, per_question=True),
                      {**input_hashes(classifier_dir, artifact("prompts").at(cfg.paths)),
                       **({"variant": variant} if variant else {})}),
        shard=Shard(state.process_index, state.num_processes, state.wait_for_everyone),
    )  # fmt: skip
    if metrics is not None:
        log.info("attribute: %s", metrics)
    return metrics


def attribute_variants(out: Path, variants: dict[str, RootConfig], what: str) -> None:
    """Attribute each named variant of the run into ``out/<name>/`` (resume parts removed after the merge,
    so they are no DVC output) and write ``out/index.json`` with each variant's seed, budget (EG: samples,
    IG: starting points, kronrod: starting intervals and evaluation budget) and target."""
    for name, variant in variants.items():
        log.info("%s: %s", what, name)
        attribute_into(variant, out / name)
        shutil.rmtree(out / name / "parts", ignore_errors=True)
    index = {n: {"seed": v.attribution.seed, "target_fn": v.attribution.target_fn, **_budget(v.attribution)}
             for n, v in variants.items()}  # fmt: skip
    write_json({what: index}, out / "index.json")


def _budget(at: AttributionConfig) -> dict[str, int]:
    if at.method == "ig":
        return {"ig_points": at.ig_points}
    if at.method == "kronrod":
        return {"kronrod_intervals": at.kronrod_intervals, "kronrod_max_evals": at.kronrod_max_evals}
    return {"n_samples": at.n_samples}


def run(cfg: RootConfig) -> dict[str, Any] | None:
    metrics = attribute_into(cfg, artifact("attributions").at(cfg.paths).parent)
    return None if metrics is None else attribute_headline(metrics)
