"""Saved training state, written at the end of every epoch so an interrupted run can resume exactly.

The state directory holds the trainable parameters only (``trainable.safetensors``; a frozen 7B backbone
is not copied each epoch), the best parameters so far (``best.safetensors``), optimizer and scheduler
state, each process's RNG states, and ``progress.json`` (epoch, best score, epochs without improvement,
history). It is swapped in atomically: a crash while saving leaves the previous epoch's state intact.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from safetensors.torch import save_file
from torch import nn

from xurs_pipeline.io import ArtifactError, Provenance, read_json, read_safetensors, write_json
from xurs_pipeline.models.atomic_dir import atomic_directory

STATE_PROVENANCE = Provenance("train_state", 1)


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


def _rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),  # noqa: NPY002 (the global state set_seed seeds)
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])  # noqa: NPY002
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


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
    torch.save(_rng_state(), staging / f"rng_{accelerator.process_index}.pt")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        with atomic_directory(state_dir) as tmp:
            for rng_file in staging.glob("rng_*.pt"):
                rng_file.rename(tmp / rng_file.name)
            staging.rmdir()
            save_file(trainable_state(accelerator.unwrap_model(model)), tmp / "trainable.safetensors")
            save_file({k: v.contiguous() for k, v in best.items()}, tmp / "best.safetensors")
            torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
            torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
            write_json(progress, tmp / "progress.json", STATE_PROVENANCE)
    accelerator.wait_for_everyone()


def has_state(state_dir: Path) -> bool:
    return (state_dir / "progress.json").is_file()


def load_state(
    state_dir: Path,
    accelerator: Accelerator,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Restore parameters, optimizer, scheduler and RNG; returns (best parameters, progress).

    A truncated or corrupt state file raises ArtifactError naming it (delete the directory, or run
    without ``train.resume``, to start over).
    """
    progress = read_json(state_dir / "progress.json", STATE_PROVENANCE)
    load_trainable(
        accelerator.unwrap_model(model), read_safetensors(state_dir / "trainable.safetensors"), str(state_dir)
    )
    optimizer.load_state_dict(_torch_load(state_dir / "optimizer.pt"))
    scheduler.load_state_dict(_torch_load(state_dir / "scheduler.pt"))
    rng_file = state_dir / f"rng_{accelerator.process_index}.pt"
    if not rng_file.is_file():
        raise FileNotFoundError(f"{rng_file}: missing; the state was saved with fewer processes")
    _set_rng_state(_torch_load(rng_file, weights_only=False))  # our own file: numpy/python RNG tuples
    return read_safetensors(state_dir / "best.safetensors"), progress


def _torch_load(path: Path, weights_only: bool = True) -> Any:
    try:
        return torch.load(path, weights_only=weights_only)
    except Exception as err:  # torch raises RuntimeError, EOFError, UnpicklingError... on a bad file
        raise ArtifactError(
            f"{path}: corrupt or truncated training state ({type(err).__name__}: {err}). Delete "
            f"{path.parent} or run without train.resume to start over."
        ) from err
