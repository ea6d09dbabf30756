"""Backbones (tiny random, hub id / local directory, GGUF file) and random-set classifiers on them.

- ``backbone.py``: load a source and save it once as a plain HF directory (``materialize_backbone``),
  load that directory (``load_backbone_dir``).
- ``classifier.py``: ``RandomSetClassifier`` (last-token / mean pooling of chosen layers, driven by
  embeddings), ``position_ids_from_mask``; ``heads.py``: linear / MLP heads, ``ClassifierOutput(raw,
  masses)``.
- ``adapters.py``: head-only, partial and LoRA (peft) adaptation; ``losses.py``: Sec. 5.1 / App. B.1 loss.
- ``checkpoint.py``: ``build_classifier``, ``save_classifier``, ``load_classifier``, warm start.
- ``collate.py``: ``pad_batch``; ``feature_cache.py``: cached pooled states (every layer) for head-only
  work.

The names below load lazily: ``xurs_pipeline.config`` imports this package's ``config`` module,
which must not pull in torch, transformers and peft.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "build_classifier": "checkpoint",
    "load_classifier": "checkpoint",
    "save_classifier": "checkpoint",
    "RandomSetClassifier": "classifier",
    "last_token_index": "classifier",
    "feature_width": "classifier",
    "pool_last_token": "classifier",
    "pool_mean": "classifier",
    "position_ids_from_mask": "classifier",
    "pad_batch": "collate",
    "ClassifierOutput": "heads",
    "RandomSetHead": "heads",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
