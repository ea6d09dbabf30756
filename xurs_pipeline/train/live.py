"""Per-epoch training metrics written with DVCLive, for ``dvc plots show`` / ``dvc plots diff``.

The training loop keeps its per-epoch history (``FitResult.history``, also in ``train_metrics.json``);
this writes it in DVCLive's layout, one TSV per metric under ``<dir>/plots/metrics/`` with the epoch as
DVCLive's ``step``, so experiments' learning curves can be compared with ``dvc plots diff``. The directory
is built under a temporary name and swapped in whole (no half-written curves).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from xurs_pipeline.models.atomic_dir import atomic_directory

# history key -> DVCLive metric name (a "/" groups curves into one plot per prefix)
CURVES = {
    "train_loss": "loss/train",
    "dev_loss": "loss/dev",
    "dev_answer_nll": "dev/answer_nll",
    "dev_accuracy": "dev/accuracy",
    "lr_head": "lr_head",
}


def log_history(history: Sequence[Mapping[str, Any]], directory: str | os.PathLike[str]) -> Path:
    """history: one mapping per epoch with ``epoch`` and the keys of :data:`CURVES` -> ``directory``."""
    from dvclive import Live

    with atomic_directory(directory) as tmp:
        live = Live(dir=str(tmp), save_dvc_exp=False, dvcyaml=None, report=None, monitor_system=False)
        try:
            for record in history:
                live.step = int(record["epoch"])
                for key, name in CURVES.items():
                    live.log_metric(name, float(record[key]))
        finally:
            live.end()
    return Path(directory)
