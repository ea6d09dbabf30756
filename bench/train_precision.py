"""Benchmark: one training step of the tuned blocks in float32 against bf16 autocast, side by side.

    python bench/train_precision.py [--experiment controlled_swap] [--tokens 80] [--rounds 6] [--threads 1]

Run where the experiment's ``backbone`` stage has run. The step is partial tuning's, through the module
``train`` fits (``models/block_cache.TopBlocks``: the top ``train.partial_layers`` blocks of the backbone
slice, the final norm and the head, fed from the block cache's states): forward on ``train.batch_size``
prompts of ``--tokens`` tokens, a loss on the masses, backward and an AdamW step over the trainable groups,
in float32 and under ``torch.autocast("cpu", torch.bfloat16)`` (what ``train.mixed_precision=bf16`` does
through accelerate), alternating, two steps a round after two warm-up steps of each. Prints the median
seconds a step of each and their ratio. Whether a model so trained still learns its cue is
``bench/swap_learning.py``'s question (``--override train.mixed_precision=bf16``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

from xurs_pipeline.config import compose, validate
from xurs_pipeline.contracts import artifact
from xurs_pipeline.models.adapters import apply_adaptation, trainable_groups
from xurs_pipeline.models.backbone import load_backbone_dir
from xurs_pipeline.models.block_cache import TopBlocks
from xurs_pipeline.models.checkpoint import build_classifier
from xurs_pipeline.models.classifier import RandomSetClassifier


def partial_classifier(experiment: str) -> tuple[RandomSetClassifier, int, int]:
    """(a fresh classifier on the experiment's backbone slice, set for partial tuning as ``train`` sets it;
    ``train.partial_layers``; ``train.batch_size``)."""
    cfg = validate(compose([f"experiment={experiment}"], conf_dir=C.ROOT / "conf"))
    classifier = build_classifier(load_backbone_dir(artifact("backbone").at(cfg.paths)), cfg.model)
    apply_adaptation(classifier, "partial", cfg.train.partial_layers)
    return classifier, cfg.train.partial_layers, cfg.train.batch_size


def step_fn(classifier: RandomSetClassifier, tuned: int, batch: int, tokens: int):
    """A training step ``step(bf16: bool)`` of what ``train`` fits under partial tuning (``TopBlocks``: the
    top ``tuned`` blocks, the final norm and the head, from states entering them) on fixed random states
    (batch, tokens, hidden), AdamW over the trainable groups."""
    torch.manual_seed(0)
    top = TopBlocks(classifier, tuned)
    states = torch.randn(batch, tokens, classifier.backbone.config.hidden_size) * 0.5
    mask = torch.ones(batch, tokens, dtype=torch.long)
    optimiser = torch.optim.AdamW([p for g in trainable_groups(classifier).values() for p in g], lr=1e-6)

    def step(bf16: bool) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = top(states, mask).masses.float().pow(2).mean()
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--experiment", default="controlled_swap")
    parser.add_argument("--tokens", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    classifier, tuned, batch = partial_classifier(args.experiment)
    step = step_fn(classifier, tuned, batch, args.tokens)
    seconds: dict[str, list[float]] = {"float32": [], "bf16": []}
    for _ in range(2):
        step(False)
        step(True)
    for _ in range(args.rounds):
        for name in seconds:
            start = time.perf_counter()
            step(name == "bf16")
            step(name == "bf16")
            seconds[name].append((time.perf_counter() - start) / 2)
    median = {name: statistics.median(s) for name, s in seconds.items()}
    shape = f"batch {batch} x {args.tokens} tokens"
    print(f"{tuned} blocks, norm and head, {shape}, {args.threads} thread(s), {C.cpu_model()}")
    print(f"float32 {median['float32']:.3f} s a step, bf16 autocast {median['bf16']:.3f} s")
    print(f"float32 / bf16: {median['float32'] / median['bf16']:.2f}")


if __name__ == "__main__":
    main()
