"""DVC stage ``prepare``: records -> ``<artifacts>/prepared/prompts.parquet`` and ``summary.json``.

Reads the tokenizer the ``backbone`` stage saved in ``<artifacts>/backbone`` (a plain Hugging Face
directory) and the ``data`` section of ``params.yaml``; all work is ``data.dataset.prepare_dataset``.
Bad input stops the stage with a message naming the file and line (or record id); nothing is written.
"""

from __future__ import annotations

from stages._common import log, run_stage
from xurs_pipeline.config import RootConfig
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset
from xurs_pipeline.data.records import DataError
from xurs_pipeline.io import ArtifactError


def body(cfg: RootConfig) -> None:
    from transformers import AutoTokenizer

    backbone = artifact("backbone").at(cfg.paths)
    if not (backbone / "tokenizer_config.json").is_file():
        log.error(
            "prepare: no tokenizer in %s; run the backbone stage first (`dvc repro backbone`)", backbone
        )
        raise SystemExit(1)
    out = artifact("prompts").at(cfg.paths).parent
    tokenizer = AutoTokenizer.from_pretrained(str(backbone), local_files_only=True)
    try:
        summary = prepare_dataset(cfg.data, tokenizer, out, data_config_hash(cfg.data))
    except (DataError, ArtifactError) as err:  # bad input, or an output that cannot be written
        log.error("prepare: %s", err)
        raise SystemExit(1) from err
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


if __name__ == "__main__":
    run_stage("prepare", body)
