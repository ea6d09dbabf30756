"""What ``xurs explain`` checks before it computes anything (:func:`check`): no flag it would ignore is
given, the classifier and the prepared prompts were made with the config of ``--params`` (the provenance
hashes the pipeline stamps into them: the training run's, ``config.train_run_hash``, and the data
section's, ``data.dataset.data_config_hash``), and the prompts' token ids are what the classifier's
tokenizer makes of their text (prompts of another backbone would be explained on foreign token ids).
Each refusal is one line (``XursError``, exit 2) naming the flag and the file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xurs_pipeline.attribution.config import ESTIMATOR_KEYS, METHOD_KEYS, PATH_METHODS, AttributionConfig
from xurs_pipeline.config import RootConfig
from xurs_pipeline.errors import XursError

CLASSIFIER_INFO = "classifier.json"  # models.checkpoint.CLASSIFIER_INFO (not imported: it loads torch)
TOKENS_CHECKED = 4  # training prompts re-encoded beside the explained record


class ExplainInputError(XursError, ValueError):
    """A flag ``xurs explain`` would ignore, or inputs that do not belong together."""


# the flags that set a key only some methods read -> that key (attribution.config's tables name the readers)
METHOD_FLAGS = {
    "--samples": "n_samples",
    "--points": "ig_points",
    "--stop": "kronrod_stop",
    "--samples-per-call": "samples_per_call",
    "--replacement": "replacement",
    "--span-tokens": "span_tokens",
    "--layer-ig-steps": "layer_ig_steps",
    "--sequential-ig-steps": "sequential_ig_steps",
}
RANDOM_METHODS = ("eg", "certified")  # the methods that draw at random (--seed): EG's plans, the shifts


def _given(args: argparse.Namespace, flag: str) -> bool:
    return getattr(args, flag[2:].replace("-", "_")) is not None


def refuse_unread_flags(args: argparse.Namespace, method: str) -> None:
    """Refuse a flag that sets a key ``method`` never reads (it would be ignored), naming its readers."""
    readers = {**METHOD_KEYS, **ESTIMATOR_KEYS}
    for flag, key in METHOD_FLAGS.items():
        if _given(args, flag) and method not in readers[key]:
            raise ExplainInputError(
                f"{flag}: a setting of {', '.join(readers[key])}, not of --method {method}: it would be "
                "ignored"
            )


def refuse_ignored_flags(args: argparse.Namespace, config: AttributionConfig) -> None:
    """Refuse the flags ``config``'s method would ignore: --refs but for the paper's estimators on training
    references, --alignment where no training prompt is read, --reference where no reference is read at
    all, --seed where nothing is drawn at random, --path-block off block paths, --compare with the method
    itself."""
    reads_references = config.method in PATH_METHODS or config.reads_one_reference
    ignored = {
        "--refs": (
            config.method not in PATH_METHODS or config.reference != "train",
            "only for the paper's estimators on training references; zero and aligned references "
            "are one each, and a token method reads the first reference alone",
        ),
        "--alignment": (
            not config.reads_training_references,
            f"--method {config.method} reads no training prompt here to align",
        ),
        "--reference": (not reads_references, f"--method {config.method} reads no reference"),
        "--seed": (
            config.method not in RANDOM_METHODS,
            f"--method {config.method} draws nothing at random (only {', '.join(RANDOM_METHODS)} do)",
        ),
        "--path-block": (config.path != "blocks", "only with --path blocks"),
    }
    for flag, (refused, why) in ignored.items():
        if refused and _given(args, flag):
            raise ExplainInputError(f"{flag}: {why}; it would be ignored")
    if args.compare is not None and args.compare == config.method:
        raise ExplainInputError(f"--compare {args.compare}: that is --method itself; compare with another")


def check(args: argparse.Namespace, cfg: RootConfig, classifier: Path, prompts: Path | None) -> None:
    """Refuse ignored flags, inputs of another config than ``args.params``, prompts of another tokenizer;
    ``prompts`` None where none are read (an inline question against zero references)."""
    ignored = [flag for flag, value in (("--answer", args.answer), ("--option", args.option)) if value]
    if args.record_id is not None and args.question is None and ignored:
        raise ExplainInputError(
            f"{' and '.join(ignored)}: only for an inline --question; --record-id {args.record_id} is "
            "explained with its own options and answer from the prepared prompts"
        )
    _made_with(
        f"--classifier {classifier}", classifier / CLASSIFIER_INFO, _train_hash(cfg), args.params, "train"
    )
    if prompts is not None:
        from xurs_pipeline.data.dataset import data_config_hash

        _made_with(f"--prompts {prompts}", prompts, data_config_hash(cfg.data), args.params, "prepare")
        _same_tokens(classifier, prompts, args.record_id)


def _train_hash(cfg: RootConfig) -> str:
    from xurs_pipeline.config import train_run_hash

    return train_run_hash(cfg)


def _made_with(flag: str, path: Path, expected: str, params: str, stage: str) -> None:
    from xurs_pipeline.io import read_provenance

    if not path.is_file():
        raise ExplainInputError(f"{flag}: {path} not found; run `dvc repro {stage}` first")
    found = read_provenance(path)
    made = found.config_hash if found is not None else "(none)"
    if made != expected:
        raise ExplainInputError(
            f"{flag}: made under config hash {made}, but {params} hashes to {expected}: another project's "
            f"(pass its --params), or older than {params} (run `dvc repro {stage}`)"
        )


def _same_tokens(classifier: Path, prompts: Path, record_id: str | None) -> None:
    """The explained record's and a few training prompts' token ids against the classifier's tokenizer."""
    import pandas as pd
    from transformers import AutoTokenizer

    from xurs_pipeline.data.tokenize import encode_batch

    info = json.loads((classifier / CLASSIFIER_INFO).read_text(encoding="utf-8"))
    backbone = classifier / (
        "backbone" if info.get("adaptation") == "partial" else info.get("backbone_dir", "")
    )
    if not (backbone / "tokenizer_config.json").is_file():
        return  # no tokenizer to compare with: loading the classifier says so
    tokenizer = AutoTokenizer.from_pretrained(str(backbone), local_files_only=True)
    frame = pd.read_parquet(prompts, columns=["record_id", "split", "prompt", "input_ids"])
    sample = pd.concat(
        [frame[frame["record_id"] == record_id], frame[frame["split"] == "train"].head(TOKENS_CHECKED)]
    )
    encoded = encode_batch(tokenizer, [str(text) for text in sample["prompt"]])
    for rid, ids, made in zip(sample["record_id"], sample["input_ids"], encoded, strict=True):
        if [int(i) for i in ids] != made.input_ids.tolist():
            raise ExplainInputError(
                f"--prompts {prompts}: record {rid}'s token ids are not what the classifier's tokenizer "
                f"({backbone.resolve()}) makes of its text: prompts prepared for another backbone; pass the "
                "prompts of the classifier's project"
            )
