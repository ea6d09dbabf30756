"""A miniature project (params.yaml + artifacts) for the reliability tests, and exact comparisons of outputs.

The params are the ``smoke`` experiment composed from ``conf/``, shrunk further: 16 synthetic
V1 prompts (8 train, 4 dev, 4 test), a one-layer tiny Llama, three epochs of head-only training and EG
with 4 references x 4 samples on the 4 test questions, computed 2 samples per call.
"""

from __future__ import annotations

import copy
import functools
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import torch
import yaml
from safetensors.torch import load_file

from xurs_pipeline.config import compose
from xurs_pipeline.io import read_json

ROOT = Path(__file__).resolve().parents[2]
MINI: dict[str, Any] = {
    "data": {"families": [2, 1, 1], "cases_per_family": 2},
    "model": {"tiny_hidden_size": 32, "tiny_layers": 1, "tiny_heads": 2},
    "train": {"max_epochs": 3, "patience": 0, "batch_size": 4, "eval_batch_size": 4},
    "attribution": {
        "refs_per_collection": 4,
        "n_samples": 4,
        "samples_per_call": 2,
        "eval_batch_size": 4,
        "progress": False,
        "device": "cpu",
        "split": "test",
        "target": "predicted",
    },
}
STAGES = ("backbone", "prepare", "train", "predict", "attribute")
OUTPUT_DIRS = {
    "backbone": "backbone",
    "prepare": "prepared",
    "train": "train",
    "predict": "predict",
    "attribute": "attribute",
}


def merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        out[key] = (
            merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


@functools.cache
def _smoke() -> dict[str, Any]:
    return compose(["experiment=smoke"], conf_dir=ROOT / "conf")


def smoke_params() -> dict[str, Any]:
    """The ``smoke`` experiment as ``params.yaml`` holds it (a fresh copy)."""
    return copy.deepcopy(_smoke())


def mini_params(**sections: dict[str, Any]) -> dict[str, Any]:
    """The smoke params with :data:`MINI` and ``sections`` merged in."""
    return merge(merge(smoke_params(), MINI), sections)


def write_project(directory: Path, params: dict[str, Any] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "params.yaml").write_text(yaml.safe_dump(params or mini_params(), sort_keys=False))
    return directory


def copy_project(source: Path, target: Path, *stages: str) -> Path:
    """A new project with ``source``'s params.yaml and the outputs of ``stages`` (no caches, no state)."""
    target.mkdir(parents=True)
    shutil.copy(source / "params.yaml", target / "params.yaml")
    for stage in stages:
        shutil.copytree(source / "data" / OUTPUT_DIRS[stage], target / "data" / OUTPUT_DIRS[stage])
    return target


def parquet_equal(a: Path, b: Path) -> None:
    """Same schema and the same values, compared exactly (floats bit for bit up to the sign of zero)."""
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.schema.equals(tb.schema), f"{a} and {b}: schemas differ"
    assert ta.num_rows == tb.num_rows, f"{a}: {ta.num_rows} rows, {b}: {tb.num_rows}"
    for name in ta.column_names:
        assert ta[name].equals(tb[name]), f"{a} and {b}: column {name!r} differs"


def tensors_equal(a: Path, b: Path) -> None:
    ta, tb = load_file(a), load_file(b)
    assert ta.keys() == tb.keys(), f"{a}, {b}: tensors {sorted(ta)} vs {sorted(tb)}"
    for key in ta:
        assert ta[key].dtype == tb[key].dtype, f"{a}[{key}]: dtype {ta[key].dtype} vs {tb[key].dtype}"
        assert torch.equal(ta[key], tb[key]), f"{a}[{key}] differs from {b}[{key}] (bitwise)"


def json_body(path: Path, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: v for k, v in read_json(path).items() if k not in drop}


def assert_same_attribute(a: Path, b: Path) -> None:
    """Two ``attribute/`` output folders hold the same rows, coordinates and reports, bit for bit."""
    parquet_equal(a / "attributions.parquet", b / "attributions.parquet")
    names_a = sorted(p.name for p in (a / "coords").iterdir())
    assert names_a == sorted(p.name for p in (b / "coords").iterdir())
    for name in names_a:
        tensors_equal(a / "coords" / name, b / "coords" / name)
    for name in ("nonfinite.json", "metrics.json"):
        assert json_body(a / name) == json_body(b / name), name


def assert_same_training(a: Path, b: Path) -> None:
    """Two ``train/`` output folders hold the same head weights (bitwise) and the same training history."""
    tensors_equal(a / "classifier" / "head.safetensors", b / "classifier" / "head.safetensors")
    assert json_body(a / "classifier" / "classifier.json") == json_body(b / "classifier" / "classifier.json")
    volatile = ("resumed_from_epoch", "feature_cache_hits")  # how the run went, not what it produced
    assert json_body(a / "train_metrics.json", volatile) == json_body(b / "train_metrics.json", volatile)
