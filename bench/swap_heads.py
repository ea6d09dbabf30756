"""Which head on the frozen backbone learns the two-cue data (the swap control's models A and B)?

    python bench/swap_heads.py [--experiment controlled_swap] [--config NAME:layers=-1/18,pool=last ...]
    python bench/swap_heads.py --config p2:adapt=partial,blocks=2 --override train=partial_cpu \
        'model.feature_layers=[-1]'

``adapt=partial,blocks=k`` tunes the top k blocks with the head (``train.adaptation=partial``) from the
cached states entering them (``models/block_cache.py``; filled once, shared by both roles, since the texts
are the same), on a freshly loaded backbone per role, and reads the test outputs through the same blocks.

Every configuration trains the experiment's head-only run (its ``train.*``) for role A (labels follow cue 1)
and role B (cue 2) on the cached frozen features (every layer and both poolings are cached once, so each
configuration costs only its training), then reads each role's test accuracy where its own cue resolves the
question (chance 1/4; the issue asks >= 0.8) and where only the other cue does (1/2 for a model that reads
only its own cue), and how often it follows the other cue (``evaluation/swap/inputs.role_accuracy``). Needs
`xurs params experiment=controlled_swap && dvc repro prepare` and the backbone.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

from xurs_pipeline.config import compose, validate
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.data.synthetic.swap import relabel_by_cue
from xurs_pipeline.evaluation.swap.inputs import role_accuracy
from xurs_pipeline.models.backbone import load_backbone_dir
from xurs_pipeline.models.block_cache import TopBlocks, cached_lower_states
from xurs_pipeline.models.checkpoint import build_classifier
from xurs_pipeline.train.data import Collator
from xurs_pipeline.train.predict import classifier_outputs
from xurs_pipeline.train.prompts import split_examples
from xurs_pipeline.train.runner import Adaptation, train_classifier

DEFAULT = ["base:layers=-1/18,pool=last,head=linear"]


def parse(text: str) -> tuple[str, dict[str, str]]:
    name, _, spec = text.partition(":")
    return name, dict(part.split("=") for part in spec.split(",") if part)


def partial_masses(classifier, input_ids, blocks: int, pad: int, cache_dir: str):
    """Masses (n, 15) of a partially tuned classifier: its top ``blocks`` blocks and head on the cached
    (frozen) states entering them, in input order."""
    import torch

    states, _ = cached_lower_states(classifier, input_ids, blocks, pad, cache_dir)
    model, collate = TopBlocks(classifier, blocks).eval(), Collator(pad, classifier.padding_side)
    masses = []
    with torch.no_grad():
        for i in range(0, len(states), 16):
            batch = collate([{"inputs": s, "labels": torch.tensor(0)} for s in states[i : i + 16]])
            masses.append(model(**batch["inputs"]).masses.float())
    return torch.cat(masses)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--experiment", default="controlled_swap")
    parser.add_argument("--config", nargs="+", default=DEFAULT)
    parser.add_argument("--override", nargs="*", default=[])
    parser.add_argument("--roles", default="AB", help="which models to train: A (cue 1), B (cue 2)")
    args = parser.parse_args()
    C.print_header("Swap control: heads on frozen features", " ".join(sys.argv))
    cfg = validate(compose([f"experiment={args.experiment}", *args.override], conf_dir=C.ROOT / "conf"))
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    backbone = load_backbone_dir(artifact("backbone").at(cfg.paths))
    m, t = cfg.model, cfg.train
    rows = []
    for name, spec in (parse(c) for c in args.config):
        layers = [int(x) for x in spec.get("layers", "-1").split("/")]
        for role, cue in (rc for rc in (("A", 1), ("B", 2)) if rc[0] in args.roles):
            frame = relabel_by_cue(prompts, cue)
            adapt = spec.get("adapt", "head_only")
            blocks = int(spec.get("blocks", 2))
            if adapt != "head_only":  # adaptations change the backbone in place: a fresh one per role
                backbone = load_backbone_dir(artifact("backbone").at(cfg.paths))
            vocab = backbone.model.config.vocab_size
            train = split_examples(frame, "train", vocab, True)
            dev = split_examples(frame, "dev", vocab, True)
            classifier = build_classifier(
                backbone,
                m.output_kind,
                spec.get("head", "linear"),
                int(spec.get("hidden", m.head_hidden)),
                m.conversion,
                seed=t.seed,
                feature_layers=layers,
                pooling=spec.get("pool", "last"),
                head_depth=int(spec.get("depth", 1)),
                head_dropout=float(spec.get("dropout", 0.0)),
            )
            settings = replace(
                t,
                lr_head=float(spec.get("lr", t.lr_head)),
                max_epochs=int(spec.get("epochs", t.max_epochs)),
                weight_decay=float(spec.get("wd", t.weight_decay)),
            )
            start = time.perf_counter()
            outcome = train_classifier(
                classifier,
                train.data,
                dev.data,
                backbone.tokenizer.pad_token_id,
                Adaptation(adapt, partial_layers=blocks),
                settings,
                feature_cache_dir=t.feature_cache_dir,
                on_epoch_end=lambda rec, tag=f"{name} {role}": print(f"    {tag}: {rec}", flush=True),
            )
            test = frame[(frame["split"] == "test") & frame["has_result"].astype(bool)]
            test_ids = [list(map(int, x)) for x in test["input_ids"]]
            pad = backbone.tokenizer.pad_token_id
            if adapt == "partial":
                masses = partial_masses(classifier, test_ids, blocks, pad, t.feature_cache_dir)
            else:
                masses = classifier_outputs(
                    classifier, test_ids, pad, 32, feature_cache_dir=t.feature_cache_dir
                ).masses
            acc = role_accuracy(masses, test, cue)
            rows.append(
                (
                    name,
                    role,
                    outcome.fit.best_epoch,
                    f"{outcome.fit.best_score:.3f}",
                    f"{acc['accuracy_own_cue']:.3f} (n {acc['n_own_cue']})",
                    f"{acc['accuracy_other_cue_only']:.3f} (n {acc['n_other_cue_only']})",
                    f"{acc['follows_other']:.3f} (n {acc['n_follows_other']})",
                    f"{time.perf_counter() - start:.0f}",
                )
            )
            print("  " + " | ".join(map(str, rows[-1])) + f" (load {C.load_average()})", flush=True)
    print(
        C.markdown_table(
            [
                "config",
                "role",
                "best epoch",
                "dev NLL",
                "test acc, own cue resolved (chance 0.25)",
                "test acc, only other cue resolved (0.5 if own cue read)",
                "follows other cue",
                "s",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
