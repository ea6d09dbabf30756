"""Cost of one training epoch when the backbone adapts: partial tuning from cached lower-block states, the
same from token ids, and LoRA over every layer (issue 14: "measure the cost per epoch of each").

    python bench/bench_partial.py [--prompts 32] [--blocks 4] [--rounds 3] [--keep-layers 20]

SmolLM2-135M (read out at ``--keep-layers`` blocks, as the default experiment), ``--prompts`` direct-clue
training prompts of the default data (~80 tokens), batch 8, one epoch per timed call, variants interleaved
round by round (``_common.paired``):

- ``partial_cached``: ``TopBlocks`` on the states entering block n - k, read from the block cache (filled
  once before timing; the fill time is printed separately);
- ``partial_tokens``: the same k blocks trained through the whole classifier from token ids;
- ``lora``: peft LoRA (rank 8) on every linear layer of every block, from token ids.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _common as C
import numpy as np
import torch

from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.synthetic import generate_direct
from xurs_pipeline.models import build_classifier
from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation, trainable_groups
from xurs_pipeline.models.backbone import load_backbone_dir, materialize_backbone
from xurs_pipeline.models.block_cache import TopBlocks, cached_lower_states
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.data import Collator, LabelledSet, TokenForward
from xurs_pipeline.train.loop import Trainee, fit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--blocks", type=int, default=4, help="tuned top blocks (partial)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep-layers", type=int, default=20)
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header(
        "Partial tuning on cached states vs from tokens vs LoRA, per epoch", "python bench/bench_partial.py"
    )
    directory = C.BENCH_CACHE / f"smollm2_keep{args.keep_layers}"
    if not (directory / "xurs_backbone.json").is_file():
        materialize_backbone(
            directory, "gguf", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", keep_layers=args.keep_layers
        )
    backbone = load_backbone_dir(directory)
    records = [r for r in generate_direct((40, 1, 1), 4, seed=0, pair_every=4) if r.split == "train"]
    frame = prepare_records(records[: args.prompts], backbone.tokenizer, 512).frame
    ids = [list(map(int, x)) for x in frame["input_ids"]]
    data = LabelledSet(ids, torch.tensor(frame["answer_idx"].to_numpy()))
    settings = TrainConfig(
        max_epochs=1, batch_size=8, global_batch=8, patience=0, lr_head=1e-3, lr_adapter=1e-4
    )
    pad = backbone.tokenizer.pad_token_id
    print(
        f"- prompts: {len(ids)}, mean length {sum(map(len, ids)) / len(ids):.0f} tokens, "
        f"{args.keep_layers} blocks, partial tunes the top {args.blocks}"
    )

    def classifier():
        """A fresh classifier on a freshly loaded backbone: adaptations (peft's LoRA wrappers, partial
        tuning's requires_grad) modify the backbone in place, so variants must not share one."""
        return build_classifier(load_backbone_dir(directory), seed=0)

    with tempfile.TemporaryDirectory() as tmp:
        fill = time.perf_counter()
        states, _ = cached_lower_states(classifier(), ids, args.blocks, pad, Path(tmp))
        fill = time.perf_counter() - fill
    cached_set = LabelledSet(states, data.labels)

    def build(mode: str):
        """(model to fit, trainable groups, train set) with the adaptation applied; built untimed."""
        model = classifier()
        apply_adaptation(
            model, "partial" if mode.startswith("partial") else "lora", args.blocks, LoraSpec(rank=8)
        )
        if mode == "partial_cached":
            return TopBlocks(model, args.blocks), trainable_groups(model), cached_set, model.padding_side
        return TokenForward(model), trainable_groups(model), data, model.padding_side

    names = ("partial_cached", "partial_tokens", "lora")
    seconds: dict[str, list[float]] = {n: [] for n in names}
    for r in range(-1, args.rounds):  # round -1 warms up
        for name in names[r % 3 :] + names[: r % 3]:
            model, groups, train, side = build(name)
            start = time.perf_counter()
            fit(Trainee(model, groups, "belief14", Collator(pad, side)), train, train, settings)
            if r >= 0:
                seconds[name].append(time.perf_counter() - start)
    rows = []
    for name in names:
        ratio = np.median(np.asarray(seconds[name]) / np.asarray(seconds["partial_cached"]))
        rows.append([name, float(np.median(seconds[name])), C.spread(seconds[name]), float(ratio)])
    print(
        C.markdown_table(["variant", "s per epoch (median)", "range", "/ partial_cached (per round)"], rows)
    )
    print(
        f"- block cache fill (once, {len(ids)} prompts through {args.keep_layers - args.blocks} blocks): "
        f"{fill:.1f} s"
    )
    C.print_footer(started)


if __name__ == "__main__":
    main()
