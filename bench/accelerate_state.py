"""Why ``train.state`` writes the training state itself rather than ``accelerator.save_state``: what each
writes for one LoRA run on a backbone (the project's tiny random Llama, or ``--hidden``/``--layers`` for a
larger one) after one optimiser step.

    python bench/accelerate_state.py                 # a few seconds on a CPU
    python bench/accelerate_state.py --hidden 576 --layers 30   # SmolLM2-135M's shape, random weights

Prints each one's files and bytes, and the files loaded with code execution allowed (accelerate's
``load_state`` reads a registered object's ``custom_checkpoint_<i>.pkl``, here the scheduler, with
``torch.load(weights_only=False)``; train.state reads every file as tensors, JSON or
``weights_only=True``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch


def _model(work: Path, hidden: int, layers: int):
    from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation
    from xurs_pipeline.models.backbone import TinySpec, load_backbone_dir, materialize_backbone
    from xurs_pipeline.models.checkpoint import build_classifier

    materialize_backbone(work / "backbone", "tiny", tiny=TinySpec(hidden_size=hidden, layers=layers))
    classifier = build_classifier(load_backbone_dir(work / "backbone"))
    return apply_adaptation(classifier, "lora", lora=LoraSpec(rank=16, targets=["q_proj", "v_proj"]))


def _files(root: Path) -> tuple[int, list[str]]:
    files = [f for f in sorted(root.rglob("*")) if f.is_file()]
    return sum(f.stat().st_size for f in files), [f.name for f in files]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    from accelerate import Accelerator
    from transformers import get_linear_schedule_with_warmup

    from xurs_pipeline.train.state import save_state, trainable_state

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = _model(work, args.hidden, args.layers)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
        scheduler = get_linear_schedule_with_warmup(optimizer, 1, 10)
        accelerator = Accelerator()
        model, optimizer = accelerator.prepare(model, optimizer)
        ids = torch.randint(0, 300, (2, 12))
        out = model.classify_ids(ids, torch.ones_like(ids))
        accelerator.backward(out.masses.sum())
        optimizer.step()
        accelerator.register_for_checkpointing(scheduler)
        accelerator.save_state(work / "accelerate")
        best = trainable_state(accelerator.unwrap_model(model))
        save_state(work / "xurs", accelerator, model, optimizer, scheduler, best, {"epoch": 0})
        total = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        print(f"parameters {total:,}, trainable {trainable:,}")
        for name in ("accelerate", "xurs"):
            size, names = _files(work / name)
            unsafe = [
                n for n in names if n.startswith("custom_checkpoint_")
            ]  # accelerate: weights_only=False
            print(
                f"{name}: {size:,} bytes in {len(names)} files {names}; "
                f"loaded with code execution allowed: {unsafe or 'none'}"
            )


if __name__ == "__main__":
    main()
