"""Data: MedQA loading, prompts with token sections and eligibility, synthetic controlled datasets,
reference collections, and the prepared-prompts schema (Sec. 5.1, 5.2, 5.4, App. B.2, App. D).

Kept light on import (``xurs_pipeline.config`` imports this package); heavier entry points live in
their modules:

- ``data.dataset.prepare_dataset(data, tokenizer, out_dir, config_hash)``: the ``prepare`` stage's work.
- ``data.prepare.prepare_records(records, tokenizer, max_tokens)``: records -> table + summary (no I/O).
- ``data.medqa.load_medqa_dir`` / ``load_medqa_hub``; ``data.synthetic.generate_v1`` / ``generate_v2``.
- ``data.sections.label_tokens``: token sections and eligibility from offsets.
"""

from xurs_pipeline.data.records import DataError, QuestionRecord, SyntheticInfo
from xurs_pipeline.data.references import PAPER_REFERENCE_SEED, hash_order, reference_collections
from xurs_pipeline.data.schema import (
    CONTENT_SECTIONS,
    PROMPT_COLUMNS,
    PROMPTS_SCHEMA,
    PROMPTS_SCHEMA_VERSION,
    SECTION_NAMES,
    SYNTHETIC_COLUMNS,
    prompts_provenance,
    read_prompts,
)

__all__ = [
    "CONTENT_SECTIONS",
    "PAPER_REFERENCE_SEED",
    "PROMPTS_SCHEMA",
    "PROMPTS_SCHEMA_VERSION",
    "PROMPT_COLUMNS",
    "SECTION_NAMES",
    "SYNTHETIC_COLUMNS",
    "DataError",
    "QuestionRecord",
    "SyntheticInfo",
    "hash_order",
    "prompts_provenance",
    "read_prompts",
    "reference_collections",
]
