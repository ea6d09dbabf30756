"""The prepared-prompts artifact: its schema name/version, column names and section labels.

``<artifacts>/prepared/prompts.parquet`` holds one row per prompt (ARCHITECTURE.md, "Contracts"):

- ``record_id`` (unique str), ``split`` (train/dev/test), ``source`` (medqa/synthetic_v1/synthetic_v2),
  ``question``, ``options`` (4 str), ``answer_idx`` (0..3), ``prompt`` (the text fed to the tokenizer);
- per token (all lists of the same length L, special tokens included, no padding): ``input_ids``,
  ``token_start``/``token_end`` (character offsets into ``prompt``, 0/0 for special tokens),
  ``sections`` (one of :data:`SECTION_NAMES`), ``eligible`` (zero-masking eligibility, Sec. 5.2);
- ``truncated`` (the question text was shortened to fit ``max_tokens``).

Synthetic rows add :data:`SYNTHETIC_COLUMNS`: ``family``, ``pair_id`` (shared by the versions with and
without the distinguishing result), ``variant``, ``detail`` (V2's irrelevant detail, "" in V1),
``has_result``, ``template_id``, ``template_unseen``, ``arrangement`` (cyclic option shift, 0 in V1),
``target_masses`` (15 floats in ``credal.FOCAL_SETS`` order), ``clue_positions`` and ``case_positions``
(token indices of the distinguishing-result slot and of the patient case description).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from xurs_pipeline.contracts import artifact
from xurs_pipeline.io import Provenance, read_parquet

PROMPTS_SCHEMA = "prompts"
PROMPTS_SCHEMA_VERSION = 1
SUMMARY_SCHEMA = "prepare_summary"
SUMMARY_SCHEMA_VERSION = 1
PROMPTS_FILE = Path(artifact("prompts").path).name  # under <artifacts>/prepared/
SUMMARY_FILE = Path(artifact("prepare_summary").path).name

SPLITS = ("train", "dev", "test")
OPTION_LETTERS = ("A", "B", "C", "D")
OPTION_SECTIONS = tuple(f"option_{letter}" for letter in OPTION_LETTERS)
SECTION_NAMES = (
    "template",  # instructions and formatting text ("Question: ", newlines, the space after a label)
    "question",
    *OPTION_SECTIONS,
    "option_label",  # "A." ... "D."
    "answer_prefix",  # "Answer:"
    "special",  # tokens the tokenizer adds (BOS, ...)
    "padding",  # never stored; used by later stages when they pad
)
CONTENT_SECTIONS = ("question", *OPTION_SECTIONS)  # the only sections whose tokens can be eligible

PROMPT_COLUMNS = artifact("prompts").columns
TOKEN_COLUMNS = ("input_ids", "token_start", "token_end", "sections", "eligible")
SYNTHETIC_COLUMNS = (
    "family",
    "pair_id",
    "variant",
    "detail",
    "has_result",
    "template_id",
    "template_unseen",
    "arrangement",
    "target_masses",
    "clue_positions",
    "case_positions",
)
# Two-cue data (``synthetic_swap``) adds, per record: each cue's token positions (2 lists), the option
# each cue's role labels, whether each cue resolves the question, and each role's 15 prescribed masses.
SWAP_COLUMNS = ("cue_positions", "cue_answers", "cue_resolved", "cue_masses")


def prompts_provenance(config_hash: str = "") -> Provenance:
    """Provenance of ``prompts.parquet``; ``config_hash`` is ``io.config_hash`` of the ``data`` section."""
    return Provenance(PROMPTS_SCHEMA, PROMPTS_SCHEMA_VERSION, config_hash)


def summary_provenance(config_hash: str = "") -> Provenance:
    return Provenance(SUMMARY_SCHEMA, SUMMARY_SCHEMA_VERSION, config_hash)


def read_prompts(path: str | os.PathLike[str], config_hash: str = "") -> pd.DataFrame:
    """Read ``prompts.parquet``, checking schema, provenance (when ``config_hash`` is given) and columns."""
    return read_parquet(path, expected=prompts_provenance(config_hash), required_columns=PROMPT_COLUMNS)
