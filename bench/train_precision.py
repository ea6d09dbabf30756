"""Benchmark: one training step of the tuned blocks in float32 against bf16 autocast, side by side.

    python bench/train_precision.py [--experiment controlled_swap] [--tokens 80] [--rounds 6] [--threads 1]

Run where the experiment's ``backbone`` stage has run. The step is partial tuning's (``train.partial_layers``
blocks on top of the backbone slice, ``model.keep_layers``, fed from the block cache's states): forward of
the tuned blocks on ``train.batch_size`` prompts of ``--tokens`` tokens, a loss on the last position,
backward and an AdamW step, in float32 and under ``torch.autocast("cpu", torch.bfloat16)`` (what
``train.mixed_precision=bf16`` does through accelerate), alternating, two steps a round after two warm-up
steps of each. Prints the median seconds a step of each and their ratio. Whether a model so trained still
learns its cue is ``bench/swap_learning.py``'s question (``--override train.mixed_precision=bf16``).
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
from xurs_pipeline.models.backbone import load_backbone_dir


def tuned_blocks(experiment: str) -> tuple[torch.nn.Module, list[torch.nn.Module], int]:
    """(the decoder, its top ``train.partial_layers`` blocks of the kept slice, ``train.batch_size``)."""
    cfg = validate(compose([f"experiment={experiment}"], conf_dir=C.ROOT / "conf"))
    decoder = load_backbone_dir(artifact("backbone").at(cfg.paths)).model
    decoder = getattr(decoder, "model", decoder)
    kept = decoder.layers[: cfg.model.keep_layers] if cfg.model.keep_layers else decoder.layers
    return decoder, list(kept[-cfg.train.partial_layers :]), cfg.train.batch_size


def step_fn(decoder, blocks, batch: int, tokens: int):
    """A training step ``step(bf16: bool)`` on fixed random states (batch, tokens, hidden)."""
    torch.manual_seed(0)
    states = torch.randn(batch, tokens, decoder.config.hidden_size) * 0.5
    positions = torch.arange(tokens)[None].expand(batch, tokens)
    rotary = decoder.rotary_emb(states, positions)
    mask = torch.full((tokens, tokens), float("-inf")).triu(1)[None, None]
    optimiser = torch.optim.AdamW([p for b in blocks for p in b.parameters()], lr=1e-6)

    def step(bf16: bool) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            h = states
            for block in blocks:
                out = block(h, attention_mask=mask, position_embeddings=rotary)
                h = out[0] if isinstance(out, tuple) else out
            loss = h[:, -1].float().pow(2).mean()
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
    decoder, blocks, batch = tuned_blocks(args.experiment)
    step = step_fn(decoder, blocks, batch, args.tokens)
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
    print(f"{len(blocks)} blocks, {shape}, {args.threads} thread(s), {C.cpu_model()}")
    print(f"float32 {median['float32']:.3f} s a step, bf16 autocast {median['bf16']:.3f} s")
    print(f"float32 / bf16: {median['float32'] / median['bf16']:.2f}")


if __name__ == "__main__":
    main()
