"""Worker of ``bench_sharding.py``: one attribution run (this process's shard, then merge on process 0).

    python bench/_shard_worker.py WORK OUT                              # one process
    torchrun --standalone --nproc_per_node 2 bench/_shard_worker.py WORK OUT   # two processes

WORK holds ``classifier/`` (``save_classifier``), ``prompts.parquet`` and ``attribution.json`` (the
``AttributionConfig`` fields); OUT receives ``attributions.parquet``, ``coords/`` and the shard reports,
exactly as the ``attribute`` stage writes them (same ``run_attribution`` call, same process setup).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
from accelerate import PartialState

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.runner import RunOutput, Shard, run_attribution
from xurs_pipeline.models.checkpoint import load_classifier


def main() -> None:
    work, out = Path(sys.argv[1]), Path(sys.argv[2])
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    state = PartialState(cpu=True, **({"backend": "gloo"} if distributed else {}))
    classifier, tokenizer = load_classifier(work / "classifier")
    cfg = AttributionConfig(**json.loads((work / "attribution.json").read_text()))
    run_attribution(
        classifier,
        pd.read_parquet(work / "prompts.parquet"),
        cfg,
        pad_id=tokenizer.pad_token_id,
        max_positions=classifier.backbone.config.max_position_embeddings,
        out=RunOutput(out, "bench"),
        shard=Shard(state.process_index, state.num_processes, state.wait_for_everyone),
    )


if __name__ == "__main__":
    main()
