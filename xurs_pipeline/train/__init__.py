"""Training with accelerate (``loop.fit``, ``runner.train_classifier``), resume state (``state.py``),
predictions (``predict.py``) and their metrics and correction audit (``metrics.py``).

The names below load lazily: ``xurs_pipeline.config`` imports this package's ``config`` module,
which must not pull in torch, transformers and peft.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EpochRecord": "loop",
    "FitResult": "loop",
    "fit": "loop",
    "auroc": "metrics",
    "correction_audit": "metrics",
    "prediction_metrics": "metrics",
    "PREDICTION_COLUMNS": "predict",
    "classifier_outputs": "predict",
    "prediction_frame": "predict",
    "Adaptation": "runner",
    "TrainOutcome": "runner",
    "train_classifier": "runner",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
