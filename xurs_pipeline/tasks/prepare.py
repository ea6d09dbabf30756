"""Task ``prepare``: records -> ``<artifacts>/prepared/prompts.parquet`` and ``summary.json``.

Reads the tokenizer the ``backbone`` stage saved in ``<artifacts>/backbone`` (a plain Hugging Face
directory) and the ``data`` section of ``params.yaml``; all work is ``data.dataset.prepare_dataset``.
Bad input stops the stage with a message naming the file and line (or record id); nothing is written.
"""

from __future__ import annotations

from transformers import AutoTokenizer

from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset
from xurs_pipeline.io import ArtifactError
from xurs_pipeline.tasks.runner import log


def run(cfg: RootConfig) -> None:
    backbone = artifact("backbone").at(cfg.paths)
    if not (backbone / "tokenizer_config.json").is_file():
        raise ArtifactError(
            f"no tokenizer in {backbone}; run the backbone stage first (`dvc repro backbone`)"
        )
    out = artifact("prompts").at(cfg.paths).parent
    tokenizer = AutoTokenizer.from_pretrained(str(backbone), local_files_only=True)
    summary = prepare_dataset(cfg.data, tokenizer, out, data_config_hash(cfg.data))
    leaked = summary["leakage"]
    if leaked["n_test_leaked"]:
        log.warning(
            "prepare: %d test questions also occur in train (%d) or dev (%d), e.g. %s; their scores are not "
            "held-out scores (summary.json: leakage)",
            leaked["n_test_leaked"],
            leaked["test_in_train"],
            leaked["test_in_dev"],
            leaked["leaked_test_ids"][:5],
        )
    eligible = summary["eligible_fraction"]
    log.info(
        "prepare: %d prompts %s, %d truncated, eligible-token fraction mean %.3f (min %.3f, max %.3f)",
        summary["n_records"],
        summary["splits"],
        summary["n_truncated"],
        eligible["mean"],
        eligible["min"],
        eligible["max"],
    )
