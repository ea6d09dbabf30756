"""Saved training state, written at the end of every epoch so an interrupted run can resume exactly.

The state directory holds the trainable parameters only (``trainable.safetensors``; a frozen 7B backbone
is not copied each epoch), the best parameters so far (``best.safetensors``), optimizer and scheduler
state, each process's RNG states (``rng_<i>.safetensors``), and ``progress.json`` (epoch, best score,
epochs without improvement, history, and the SHA-256 of every other file). It is swapped in atomically:
a crash while saving leaves the previous epoch's state intact.

Written here rather than by ``accelerator.save_state``/``load_state``, for three needs
(``python bench/accelerate_state.py --hidden 576 --layers 30``: LoRA on a 101M-parameter random Llama,
1.1M trainable; accelerate wrote 412,988,849 bytes a save, this 17,975,208): accelerate saves the whole
model each epoch (a frozen 7B backbone copied every epoch; here only the trainable parameters), loads a
registered object such as the scheduler from ``custom_checkpoint_0.pkl`` with
``torch.load(weights_only=False)`` (code execution on load), and writes into its directory in place,
with no checksums (an interrupted save leaves a half state that ``load_state`` reads).

Nothing is unpickled from disk: RNG states are tensors and JSON, optimizer and scheduler states are read
with ``torch.load(weights_only=True)`` (torch's allow-list of tensor and container types), and every
file is checked against its SHA-256 in ``progress.json`` before it is read, so a damaged or planted file
stops the resume naming it.
"""

from __future__ import annotations

import json
import logging
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

from xurs_pipeline.fingerprint import ContentKey, sha256_file
from xurs_pipeline.io import (
    ArtifactError,
    Provenance,
    read_json,
    read_safetensors,
    write_json,
    write_safetensors,
)
from xurs_pipeline.models.atomic_dir import atomic_directory

STATE_PROVENANCE = Provenance("train_state", 2)  # 1: RNG states pickled (rng_<i>.pt), no checksums
KEY_PROVENANCE = Provenance("train_state_key", 1)
log = logging.getLogger("xurs")


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Detached CPU copies of the parameters that require gradients, by name."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable(model: nn.Module, tensors: dict[str, torch.Tensor], where: str) -> None:
    """Copy ``tensors`` into the model's trainable parameters; the names must match exactly."""
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    if set(params) != set(tensors):
        missing, extra = sorted(set(params) - set(tensors)), sorted(set(tensors) - set(params))
        raise ValueError(
            f"{where}: saved trainable parameters do not match this model (missing {missing[:5]}, "
            f"unexpected {extra[:5]}); was it saved under another adaptation or model config?"
        )
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(tensors[name].to(p.device, p.dtype))


def _rng_tensors() -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """This process's RNG states as (tensors, string metadata) for a safetensors file: torch (and CUDA)
    generator states as bytes, numpy's MT19937 keys and Python's state words as int64."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()  # noqa: NPY002 (what set_seed seeds)
    version, words, gauss_next = random.getstate()
    tensors = {
        "torch": torch.get_rng_state(),
        "numpy_keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
        "python_words": torch.tensor(words, dtype=torch.int64),
    }
    if torch.cuda.is_available():
        tensors.update({f"cuda_{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())})
    meta = {
        "numpy": json.dumps([kind, int(pos), int(has_gauss), float(gauss)]),
        "python": json.dumps([version, gauss_next]),
    }
    return tensors, meta


def _set_rng_state(tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> None:
    kind, pos, has_gauss, gauss = json.loads(meta["numpy"])
    keys = tensors["numpy_keys"].numpy().astype(np.uint32)
    torch.set_rng_state(tensors["torch"])
    np.random.set_state((kind, keys, pos, has_gauss, gauss))  # noqa: NPY002
    version, gauss_next = json.loads(meta["python"])
    random.setstate((version, tuple(int(w) for w in tensors["python_words"].tolist()), gauss_next))
    cuda = [tensors[f"cuda_{i}"] for i in range(sum(k.startswith("cuda_") for k in tensors))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


def save_state(
    state_dir: Path,
    accelerator: Accelerator,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    best: dict[str, torch.Tensor],
    progress: dict[str, Any],
) -> None:
    """Write the state of the run after an epoch (collective: every process must call it)."""
    staging = state_dir.parent / f".{state_dir.name}.staging"
    if accelerator.is_main_process:
        staging.mkdir(parents=True, exist_ok=True)
    accelerator.wait_for_everyone()
    tensors, meta = _rng_tensors()
    write_safetensors(tensors, staging / f"rng_{accelerator.process_index}.safetensors", meta)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        with atomic_directory(state_dir) as tmp:
            for rng_file in staging.glob("rng_*.safetensors"):
                rng_file.rename(tmp / rng_file.name)
            staging.rmdir()
            save_file(trainable_state(accelerator.unwrap_model(model)), tmp / "trainable.safetensors")
            save_file({k: v.contiguous() for k, v in best.items()}, tmp / "best.safetensors")
            torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
            torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
            checksums = {f.name: sha256_file(f) for f in sorted(tmp.iterdir()) if f.is_file()}
            write_json({**progress, "checksums": checksums}, tmp / "progress.json", STATE_PROVENANCE)
    accelerator.wait_for_everyone()


def has_state(state_dir: Path) -> bool:
    return (state_dir / "progress.json").is_file()


def keyed_state_dir(root: str | Path, key: ContentKey, resume: bool) -> Path:
    """``root/<key digest>``: the state directory of the run whose inputs hash to ``key`` (config, backbone,
    prompts, code). Records the key's parts beside it (``.<digest>.key.json``); with ``resume`` and no
    state there, logs which inputs differ from those of the states that are there (never resumed)."""
    base = Path(root)
    state_dir = base / key.digest
    if resume and not has_state(state_dir):
        for other in sorted(base.glob(".*.key.json")):
            try:
                parts = read_json(other, KEY_PROVENANCE).get("parts", {})
            except ArtifactError:
                continue
            if has_state(base / other.name[1:].removesuffix(".key.json")):
                log.warning(
                    "train: not resuming from %s: it was saved under other inputs (%s changed); training "
                    "from the start",
                    base / other.name[1:].removesuffix(".key.json"),
                    ", ".join(key.changed(parts)),
                )
    provenance = Provenance(KEY_PROVENANCE.schema, KEY_PROVENANCE.schema_version, key.digest)
    write_json({"parts": dict(key.parts)}, base / f".{key.digest}.key.json", provenance)
    return state_dir


def load_state(
    state_dir: Path,
    accelerator: Accelerator,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Restore parameters, optimizer, scheduler and RNG; returns (best parameters, progress).

    A truncated, corrupt or altered state file (checked against its SHA-256 in ``progress.json``)
    raises ArtifactError naming it (delete the directory, or run without ``train.resume``, to start over).
    """
    progress = read_json(state_dir / "progress.json", STATE_PROVENANCE)
    checksums = progress.pop("checksums", {})
    progress.pop("_provenance", None)
    rng_file = state_dir / f"rng_{accelerator.process_index}.safetensors"
    if rng_file.name not in checksums:
        raise FileNotFoundError(f"{rng_file}: missing; the state was saved with fewer processes")
    for name, expected in checksums.items():
        _check_file(state_dir / name, expected)
    load_trainable(
        accelerator.unwrap_model(model), read_safetensors(state_dir / "trainable.safetensors"), str(state_dir)
    )
    optimizer.load_state_dict(_torch_load(state_dir / "optimizer.pt"))
    scheduler.load_state_dict(_torch_load(state_dir / "scheduler.pt"))
    _set_rng_state(read_safetensors(rng_file), _metadata(rng_file))
    return read_safetensors(state_dir / "best.safetensors"), progress


def _metadata(path: Path) -> dict[str, str]:
    with safe_open(str(path), framework="pt") as handle:
        return dict(handle.metadata() or {})


def _damaged(path: Path, why: str) -> ArtifactError:
    return ArtifactError(
        f"{path}: corrupt or truncated training state ({why}). Delete {path.parent} or run without "
        "train.resume to start over."
    )


def _check_file(path: Path, expected: str) -> None:
    if not path.is_file():
        raise _damaged(path, "missing")
    if sha256_file(path) != expected:
        raise _damaged(path, "its SHA-256 differs from the one recorded in progress.json")


def _torch_load(path: Path) -> Any:
    """``torch.load`` with ``weights_only=True``: tensors, numbers and containers only, never code."""
    try:
        return torch.load(path, weights_only=True)
    except Exception as err:  # torch raises RuntimeError, EOFError, UnpicklingError... on a bad file
        raise _damaged(path, _load_failure(err)) from err


def _load_failure(err: Exception) -> str:
    """Why ``torch.load(weights_only=True)`` refused a file, in one line. torch's own message for a
    refused pickle advises re-running with ``weights_only=False``, which would execute whatever the file
    holds: only the line naming what was refused is kept."""
    if isinstance(err, pickle.UnpicklingError) and "Weights only load failed" in str(err):
        lines = [line.strip() for line in str(err).splitlines()]
        what = next(
            (line for line in lines if line.startswith(("Trying to load", "Unsupported"))), "unknown content"
        )
        return f"it holds more than tensors and containers ({what.rstrip('.')}); it was not loaded"
    first = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
    return f"{type(err).__name__}: {first}" if first else type(err).__name__
