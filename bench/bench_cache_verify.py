"""Benchmark: what verifying the feature cache on every read costs (``models/feature_cache.py``).

    python bench/bench_cache_verify.py [--prompts 256] [--tokens 96] [--hidden 576 --layers 30 --heads 9]

A head-only training run loads its features with ``cached_features``: on a miss it runs the frozen backbone
over every prompt (extraction, then the file is written); on a hit it reads the file and, since the
verification was added, recomputes ``VERIFY_PROMPTS`` (8) random prompts and compares them with the file.
Side by side in one run, on one random backbone (default: SmolLM2-135M's shape, hidden 576, 30 layers,
9 heads; random weights cost the same arithmetic as trained ones), the same prompts:

- miss: extraction of every prompt and the write (a fresh cache directory each round);
- hit, unverified: the file read alone (what a hit does before ``_verify_sample``);
- hit, verified: the file read and the 8-prompt recomputation (what a run does now).

Rounds rotate the order of the three; medians over ``--rounds`` rounds. The verification's cost is
``verified - unverified``, shown in seconds, as a share of the verified hit (the feature load of a
head-only run whose cache is warm) and of the miss (the feature load without a cache).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import _common as C
import numpy as np

from xurs_pipeline.models import build_classifier, feature_cache
from xurs_pipeline.models.backbone import TinySpec, load_backbone_dir, materialize_backbone
from xurs_pipeline.models.tiny import TINY_CORPUS


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--hidden", type=int, default=576)
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header(
        "Feature-cache verification: a recomputed sample of 8 prompts on every read",
        f"bench/bench_cache_verify.py --prompts {args.prompts} --tokens {args.tokens} --hidden {args.hidden} "
        f"--layers {args.layers} --heads {args.heads} --rounds {args.rounds}",
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = TinySpec(hidden_size=args.hidden, layers=args.layers, heads=args.heads)
        materialize_backbone(work / "backbone", "tiny", tiny=spec)
        backbone = load_backbone_dir(work / "backbone")
        classifier = build_classifier(backbone, seed=0)
        rng = np.random.default_rng(0)
        prompts = []
        for _ in range(args.prompts):
            text = " ".join(rng.choice(TINY_CORPUS, size=4 * args.tokens).tolist())
            prompts.append(backbone.tokenizer(text).input_ids[: args.tokens])
        pad = backbone.tokenizer.pad_token_id
        warm = work / "warm"
        feature_cache.cached_features(classifier, prompts, pad, warm)  # the file every hit reads
        (cached,) = warm.glob("*.safetensors")
        hidden = classifier.backbone.config.hidden_size
        shape = (len(prompts), classifier.n_layers + 1, len(feature_cache.POOLED_KINDS), hidden)

        def miss(r: int) -> None:
            _, hit = feature_cache.cached_features(classifier, prompts, pad, work / f"cold{r}")
            assert not hit

        def unverified(_: int) -> None:  # what a hit does without _verify_sample: the read alone
            pooled = feature_cache._read_layers(cached, shape, classifier.layer_indices)
            classifier.features_from_pooled(pooled)

        def verified(_: int) -> None:
            _, hit = feature_cache.cached_features(classifier, prompts, pad, warm)
            assert hit

        wall, cpu = C.interleaved(
            {"miss": miss, "hit, unverified": unverified, "hit, verified": verified}, args.rounds
        )
    med = {name: float(np.median(times)) for name, times in wall.items()}
    cost = med["hit, verified"] - med["hit, unverified"]
    print(
        f"random Llama backbone, hidden {args.hidden}, {args.layers} layers, {args.heads} heads; "
        f"{args.prompts} prompts of {args.tokens} tokens; {feature_cache.VERIFY_PROMPTS} verified per read\n"
    )
    rows = [[name, med[name], float(np.median(cpu[name]))] for name in med]
    print(C.markdown_table(["feature load", "wall (s, median)", "process CPU (s, median)"], rows))
    print(
        f"\nverification: {cost:.3f} s = {100 * cost / med['hit, verified']:.1f}% of the verified hit, "
        f"{100 * cost / med['miss']:.2f}% of the miss (extraction of all {args.prompts} prompts)"
    )
    C.print_footer(started)


if __name__ == "__main__":
    main()
