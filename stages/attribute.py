"""DVC stage ``attribute``: trained classifier + prepared prompts -> ``<artifacts>/attribute/``:

- ``attributions.parquet`` (schema ``attributions``): one row per explained (record_id, target option);
- ``coords/<coords_file>``: coordinate-level attributions e (L, d) per row (safetensors);
- ``nonfinite.json``: questions whose widths or gradients were not finite (never written as numbers);
- ``metrics.json``: rows, residual median/max (Eq. 9), gradient evaluations.

Finished questions are kept in ``<artifacts>/attribute/parts/`` (not a DVC output) so an interrupted run
resumes. Several processes split the questions: ``torchrun --nproc_per_node N -m stages.attribute`` (or
``accelerate launch -m stages.attribute``); process 0 merges.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch
from accelerate import PartialState

from stages._common import log, run_stage
from xurs_pipeline.attribution.gradients import AttributionMemoryError
from xurs_pipeline.attribution.inputs import AttributionInputError
from xurs_pipeline.attribution.model import DTYPES
from xurs_pipeline.attribution.question import NonFiniteError
from xurs_pipeline.attribution.runner import run_attribution
from xurs_pipeline.config import RootConfig, attribution_fingerprint, train_run_hash
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import PROMPTS_FILE, read_prompts
from xurs_pipeline.io import ArtifactError, write_json
from xurs_pipeline.models.checkpoint import load_classifier


def attribute_into(cfg: RootConfig, out_dir: Path) -> None:
    """Attribute ``cfg.attribution`` with the trained classifier into ``out_dir`` (this process's shard)."""
    at, artifacts = cfg.attribution, Path(cfg.paths.artifacts)
    cpu = at.device == "cpu" or (at.device == "auto" and not torch.cuda.is_available())
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1  # started by torchrun / accelerate launch
    state = PartialState(cpu=cpu, **({"backend": "gloo"} if cpu and distributed else {}))
    try:
        prompts = read_prompts(artifacts / "prepared" / PROMPTS_FILE, data_config_hash(cfg.data))
        classifier, tokenizer = load_classifier(
            artifacts / "train" / "classifier", config_hash=train_run_hash(cfg)
        )
        classifier.to(device=state.device, dtype=DTYPES[at.precision])
        max_positions = getattr(classifier.backbone.config, "max_position_embeddings", None)
        metrics = run_attribution(
            classifier, prompts, at, pad_id=tokenizer.pad_token_id, max_positions=max_positions,
            out_dir=out_dir, fingerprint=attribution_fingerprint(cfg),
            shard_index=state.process_index, shard_count=state.num_processes, barrier=state.wait_for_everyone,
        )  # fmt: skip
    except (ArtifactError, AttributionInputError, NonFiniteError, AttributionMemoryError) as err:
        log.error("attribute: %s", err)
        raise SystemExit(1) from err
    if metrics is not None:
        log.info("attribute: %s", metrics)


def attribute_variants(out: Path, variants: dict[str, RootConfig], what: str) -> None:
    """Attribute each named variant of the run into ``out/<name>/`` (resume parts removed after the merge,
    so they are no DVC output) and write ``out/index.json`` with each variant's seed, samples and target."""
    for name, variant in variants.items():
        log.info("%s: %s", what, name)
        attribute_into(variant, out / name)
        shutil.rmtree(out / name / "parts", ignore_errors=True)
    index = {n: {"seed": v.attribution.seed, "n_samples": v.attribution.n_samples,
                 "target_fn": v.attribution.target_fn} for n, v in variants.items()}  # fmt: skip
    write_json({what: index}, out / "index.json")


def body(cfg: RootConfig) -> None:
    attribute_into(cfg, Path(cfg.paths.artifacts) / "attribute")


if __name__ == "__main__":
    run_stage("attribute", body)
