"""Data: MedQA loading, prompts with token sections and eligibility, synthetic controlled datasets,
reference collections, and the prepared-prompts schema (Sec. 5.1, 5.2, 5.4, App. B.2, App. D).

Nothing is imported here (``xurs_pipeline.config`` imports this package's ``config`` module, and every
stage loads it): each name lives in its module:

- ``data.dataset.prepare_dataset(data, tokenizer, out_dir, config_hash)``: the ``prepare`` stage's work.
- ``data.prepare.prepare_records(records, tokenizer, max_tokens)``: records -> table + summary (no I/O).
- ``data.medqa.load_medqa_dir`` / ``load_medqa_hub``; ``data.synthetic.generate_v1`` / ``generate_v2``.
- ``data.sections.label_tokens``: token sections and eligibility from offsets.
- ``data.records``: ``QuestionRecord``, ``DataError``; ``data.references``: reference collections;
  ``data.schema``: the prepared prompts' columns, ``read_prompts``, ``prompts_provenance``.
"""
