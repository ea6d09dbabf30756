"""Benchmark 3: head-only training with the feature cache vs without, per epoch and per extra seed.

    /work/venv/bin/python bench/bench_feature_cache.py [--quick] [--model smollm2|tiny]

Both variants train the same ``belief14`` linear head on a frozen backbone with the same settings
(``TrainConfig``: AdamW, batch 8, ``--epochs`` epochs without early stopping):

- cached: ``train.runner.train_classifier(..., Adaptation("head_only"), feature_cache_dir=...)``: the
  backbone's last-token features are extracted once into a fresh cache directory (first seed: a miss),
  then every epoch, and every later seed (a hit), trains the head on the cached features;
- uncached: ``train.loop.fit(TokenForward(classifier), ...)`` after ``apply_adaptation("head_only")``:
  every epoch runs the frozen backbone on every training and dev prompt.

Seeds alternate between the variants (cached s, uncached s, cached s+1, ...). Per epoch = median
duration of epochs after the first (time between ``on_epoch_end`` calls); per extra seed = the whole
training call for a seed after the first. Prompts: MedQA-style sentences from the tiny corpus, tokenised
by the backbone's tokenizer, ``--tokens`` tokens each; random labels.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _common as C
import numpy as np
import torch

from xurs_pipeline.models import build_classifier
from xurs_pipeline.models.adapters import apply_adaptation, trainable_groups
from xurs_pipeline.models.backbone import Backbone, TinySpec, load_backbone_dir, materialize_backbone
from xurs_pipeline.models.tiny import TINY_CORPUS
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.data import Collator, LabelledSet, TokenForward
from xurs_pipeline.train.loop import EpochRecord, Saving, Trainee, fit
from xurs_pipeline.train.runner import Adaptation, train_classifier


def load_backbone(name: str, work: Path) -> Backbone:
    if name == "smollm2":
        directory = C.BENCH_CACHE / "smollm2_backbone"
        if not (directory / "xurs_backbone.json").is_file():
            materialize_backbone(directory, "gguf", C.SMOLLM2_GGUF, pad_token="<|im_end|>")
        return load_backbone_dir(directory)
    materialize_backbone(work / "tiny", "tiny", tiny=TinySpec())
    return load_backbone_dir(work / "tiny")


def labelled(backbone: Backbone, n: int, tokens: int, seed: int) -> LabelledSet:
    rng = np.random.default_rng(seed)
    inputs = []
    for _ in range(n):
        text = " ".join(rng.choice(TINY_CORPUS, size=12).tolist())
        inputs.append(backbone.tokenizer(text).input_ids[:tokens])
    return LabelledSet(inputs, torch.as_tensor(rng.integers(0, 4, n)))


class Clock:
    """Timestamps of ``on_epoch_end`` calls."""

    def __init__(self) -> None:
        self.marks: list[float] = []

    def __call__(self, _: EpochRecord) -> None:
        self.marks.append(time.perf_counter())

    def later_epochs(self) -> list[float]:
        return list(np.diff(self.marks))


def run_cached(backbone, train, dev, settings, cache: Path) -> tuple[float, list[float], torch.Tensor, bool]:
    classifier = build_classifier(backbone, seed=settings.seed)
    clock, start = Clock(), time.perf_counter()
    outcome = train_classifier(
        classifier,
        train,
        dev,
        backbone.tokenizer.pad_token_id,
        Adaptation("head_only"),
        settings,
        feature_cache_dir=cache,
        on_epoch_end=clock,
    )
    hit = all(outcome.feature_cache_hits)
    return time.perf_counter() - start, clock.later_epochs(), classifier.head.net.weight.detach().clone(), hit


def run_uncached(backbone, train, dev, settings) -> tuple[float, list[float], torch.Tensor]:
    classifier = build_classifier(backbone, seed=settings.seed)
    clock, start = Clock(), time.perf_counter()
    apply_adaptation(classifier, "head_only")
    collator = Collator(backbone.tokenizer.pad_token_id, classifier.padding_side)
    trainee = Trainee(TokenForward(classifier), trainable_groups(classifier), "belief14", collator)
    fit(trainee, train, dev, settings, Saving(on_epoch_end=clock))
    classifier.eval()
    return time.perf_counter() - start, clock.later_epochs(), classifier.head.net.weight.detach().clone()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="16 + 8 prompts, 2 epochs")
    parser.add_argument("--model", default="smollm2", choices=("smollm2", "tiny"))
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header(
        "Benchmark 3: head-only training with vs without the feature cache",
        f"bench/bench_feature_cache.py --model {args.model}" + (" --quick" if args.quick else ""),
    )
    n_train, n_dev, epochs = (16, 8, 2) if args.quick else (32, 8, args.epochs)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        backbone = load_backbone(args.model, work)
        train, dev = labelled(backbone, n_train, args.tokens, 0), labelled(backbone, n_dev, args.tokens, 1)
        mean_len = np.mean([len(x) for x in [*train.inputs, *dev.inputs]])
        print(
            f"{args.model}: {n_train} train + {n_dev} dev prompts, {mean_len:.0f} tokens on average, "
            f"{epochs} epochs, batch 8, {args.seeds} seeds\n"
        )
        cached, uncached, diffs = [], [], []
        for seed in range(7, 7 + args.seeds):
            settings = TrainConfig(
                max_epochs=epochs, patience=0, batch_size=8, global_batch=8, seed=seed, lr_head=1e-3
            )
            cached.append(run_cached(backbone, train, dev, settings, work / "features"))
            uncached.append(run_uncached(backbone, train, dev, settings))
            diffs.append(float((cached[-1][2] - uncached[-1][2]).abs().max()))
    assert not cached[0][3], "the first seed should miss the fresh feature cache"
    assert all(c[3] for c in cached[1:]), "later seeds should hit the feature cache"
    epoch_c = float(np.median([e for c in cached for e in c[1]]))
    epoch_u = float(np.median([e for u in uncached for e in u[1]]))
    seed_c = float(np.median([c[0] for c in cached[1:]]))
    seed_u = float(np.median([u[0] for u in uncached[1:]]))
    rows = [
        ["one epoch (median of epochs after the first)", epoch_c, epoch_u, epoch_u / epoch_c],
        ["one extra seed (whole training call, cache hit)", seed_c, seed_u, seed_u / seed_c],
        [
            "first seed (cached: extraction + training)",
            cached[0][0],
            uncached[0][0],
            uncached[0][0] / cached[0][0],
        ],
    ]
    print(C.markdown_table(["what", "cached (s)", "uncached (s)", "uncached / cached"], rows))
    print(
        f"\nLargest difference between the heads trained with and without the cache (same seed): "
        f"{max(diffs):.1e} (0 = bitwise identical)."
    )
    C.print_footer(started)


if __name__ == "__main__":
    main()
