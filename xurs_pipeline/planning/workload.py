"""The sizes a plan needs from the data: prompt tokens, training examples, explained questions, dev examples.
Read from the prepared prompts (``<artifacts>/prepared/prompts.parquet``) when ``prepare`` has run for the
planned ``data`` section (their provenance hash equals ``data_config_hash`` of it: prompts another
experiment prepared size nothing here), else from the config (``data.max_tokens``,
``attribution.max_questions``) or a MedQA train file's line count (dev examples: 0 before ``prepare``)."""

from __future__ import annotations

from pathlib import Path

from xurs_pipeline.config import RootConfig
from xurs_pipeline.planning.estimate import Workload


def _prepared(cfg: RootConfig, root: Path):  # type: ignore[no-untyped-def]
    """The prepared prompts' split and token columns if ``prepare`` ran for ``cfg.data``, else None."""
    from xurs_pipeline.contracts import artifact
    from xurs_pipeline.data.dataset import current_prompts

    return current_prompts(root / artifact("prompts").at(cfg.paths), cfg.data, ["split", "input_ids"])


def _medqa_train_lines(cfg: RootConfig, root: Path) -> int | None:
    d = cfg.data
    if d.source != "medqa" or d.medqa_carve:
        return None
    path = root / d.medqa_path / d.medqa_files.format(split="train")
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def resolve_workload(
    cfg: RootConfig,
    root: Path,
    prompt_tokens: int | None = None,
    train_examples: int | None = None,
    questions: int | None = None,
) -> Workload:
    """Sizes from the arguments, else the prepared prompts, else the config; ValueError naming the
    option to give when a size cannot be known before ``prepare`` runs."""
    prepared = _prepared(cfg, root)
    lengths = None if prepared is None else prepared["input_ids"].map(len)
    if prompt_tokens is None:
        prompt_tokens = int(lengths.max()) if lengths is not None else cfg.data.max_tokens
    if train_examples is None:
        if prepared is not None:
            train_examples = int((prepared["split"] == "train").sum())
        else:
            train_examples = _medqa_train_lines(cfg, root)
    if train_examples is None:
        raise ValueError(
            "the number of training examples is unknown before `prepare` runs: give --train-examples"
        )
    if questions is None or questions == 0:  # --questions 0: every question, as attribution.max_questions=0
        limit = (cfg.attribution.max_questions or len(cfg.attribution.record_ids)) if questions is None else 0
        available = None if prepared is None else int((prepared["split"] == cfg.attribution.split).sum())
        questions = (
            min(x for x in (limit or None, available) if x is not None) if (limit or available) else None
        )
    if questions is None:
        raise ValueError(
            "the number of explained questions is unknown: attribution.max_questions (or --questions) is 0, "
            "every question of the split, and `prepare` has not run for this data config: give --questions N"
        )
    dev_examples = 0 if prepared is None else int((prepared["split"] == "dev").sum())
    return Workload(prompt_tokens, train_examples, questions, dev_examples)
