"""The whole preparation from typed arguments: load or generate records, validate, tokenise, write.

``prepare_dataset(data, tokenizer, out_dir)`` is what the ``prepare`` stage runs. Everything that can
fail (bad input files, rule-reader rejections, prompts that cannot fit, a failed strict pair check)
fails before anything is written; then ``prompts.parquet`` and ``summary.json`` are each written
atomically (``xurs_pipeline.io``), and the table is removed again if the summary cannot be written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.contracts import prompts_hash
from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.medqa import load_medqa_dir, load_medqa_hub
from xurs_pipeline.data.prepare import PreparedPrompts, prepare_records
from xurs_pipeline.data.records import DataError, QuestionRecord
from xurs_pipeline.data.schema import (
    PROMPT_COLUMNS,
    PROMPTS_FILE,
    SUMMARY_FILE,
    prompts_provenance,
    summary_provenance,
)
from xurs_pipeline.data.synthetic import (
    KNOWN_FLAWS,
    check_all,
    check_pairs,
    generate_direct,
    generate_swap,
    generate_v1,
    generate_v2,
    read_direct,
    read_swap,
    shortcut_diagnostics,
)
from xurs_pipeline.io import read_provenance, write_json, write_parquet


def data_config_hash(data: DataConfig) -> str:
    """The provenance hash of the prepared prompts: ``io.config_hash`` of the data keys its source reads
    (``contracts.data_keys``, the prepare stage's params), so a MedQA key changes no synthetic prompts."""
    return prompts_hash(data)


def current_prompts(path: str | Path, data: DataConfig, columns: list[str]) -> pd.DataFrame | None:
    """``columns`` of the prepared prompts at ``path`` if ``prepare`` made them for ``data`` (their
    provenance hash is :func:`data_config_hash` of it), else None (none yet, or another data config's)."""
    path = Path(path)
    if not path.is_file():
        return None
    provenance = read_provenance(path)
    if provenance is None or provenance.config_hash != data_config_hash(data):
        return None  # another data config's prompts (another experiment, or a changed key)
    return pd.read_parquet(path, columns=columns)


def load_records(data: DataConfig) -> list[QuestionRecord]:
    """The records ``data`` describes: MedQA from a directory or the hub, or a synthetic dataset."""
    if data.source == "medqa":
        if data.medqa_hub:
            return load_medqa_hub(data.medqa_hub, data.medqa_carve, data.medqa_train_fraction, data.seed)
        return load_medqa_dir(
            data.medqa_path, data.medqa_files, data.medqa_carve, data.medqa_train_fraction, data.seed
        )
    families = (data.families[0], data.families[1], data.families[2])
    if data.source == "synthetic_v1":
        return generate_v1(families, data.cases_per_family, data.seed, reproduce_flaws=data.v1_flaws)
    if data.source == "synthetic_direct":
        return generate_direct(families, data.cases_per_family, data.seed, data.pair_every)
    if data.source == "synthetic_swap":
        return generate_swap(
            families, data.cases_per_family, data.seed, cue2_first=data.cue2_first, order=data.swap_order
        )
    return generate_v2(families, data.cases_per_family, data.seed)


def prepare_and_validate(
    records: list[QuestionRecord],
    tokenizer: Any,
    max_tokens: int,
    favour_label: bool = False,
    require_paired_lengths: bool = False,
) -> PreparedPrompts:
    """:func:`prepare_records` plus, for synthetic records, the App. D.2 validators in the summary.

    Raises :class:`DataError` when the rule-based reader rejects a record, or when
    ``require_paired_lengths`` and a result pair does not tokenise position by position alike.
    """
    synthetic = bool(records) and records[0].synthetic is not None
    if synthetic and records[0].source in _READERS:
        return _prepare_read(records, tokenizer, max_tokens)
    reader = check_all(records, favour_label) if synthetic else None
    if reader is not None and reader.rejections:
        shown = "; ".join(f"record {rid!r}: {why}" for rid, why in reader.rejections[:5])
        raise DataError(
            f"rule-based reader rejected {len(reader.rejections)} of {reader.n_checked} records: {shown}"
        )
    prepared = prepare_records(records, tokenizer, max_tokens)
    summary = {"source": records[0].source if records else "", **prepared.summary}
    if reader is not None:
        pairs = check_pairs(prepared.frame)
        if require_paired_lengths and pairs.failures:
            shown = "; ".join(f"pair {pid!r}: {why}" for pid, why in pairs.failures[:5])
            raise DataError(
                f"{len(pairs.failures)} of {pairs.n_pairs} result pairs do not tokenise alike "
                f"(data.require_paired_lengths=true): {shown}"
            )
        summary["validators"] = {
            "reader": reader.as_dict(),
            "pairs": pairs.as_dict(),
            "shortcuts": shortcut_diagnostics(records, reader.readings),
        }
    return PreparedPrompts(prepared.frame, summary)


def _read_direct(record: QuestionRecord) -> None:
    """The direct-clue reader: the label among the options the result names, one with it, two without."""
    named = read_direct(record)
    if len(named) != (1 if record.synthetic.has_result else 2):
        raise ValueError(f"result names {len(named)} options but has_result={record.synthetic.has_result}")


_READERS = {"synthetic_direct": ("direct-clue", _read_direct), "synthetic_swap": ("two-cue", read_swap)}


def _prepare_read(records: list[QuestionRecord], tokenizer: Any, max_tokens: int) -> PreparedPrompts:
    """Data with a one-record reader (direct: :func:`read_direct`; two cues: :func:`read_swap`): every
    record must pass it; then prepared like any synthetic data (direct data also checks its pairs)."""
    source = records[0].source
    what, reader = _READERS[source]
    rejections = []
    for record in records:
        try:
            reader(record)
        except ValueError as err:
            rejections.append((record.record_id, str(err)))
    if rejections:
        shown = "; ".join(f"record {rid!r}: {why}" for rid, why in rejections[:5])
        raise DataError(f"{what} reader rejected {len(rejections)} of {len(records)} records: {shown}")
    prepared = prepare_records(records, tokenizer, max_tokens)
    validators: dict[str, Any] = {"reader": {"n_checked": len(records), "n_rejected": 0}}
    if source == "synthetic_direct":
        validators["pairs"] = check_pairs(prepared.frame).as_dict()
    return PreparedPrompts(prepared.frame, {"source": source, **prepared.summary, "validators": validators})


def prepare_dataset(
    data: DataConfig, tokenizer: Any, out_dir: str | Path, config_hash: str = ""
) -> dict[str, Any]:
    """Prepare what ``data`` describes with ``tokenizer``; write ``out_dir/prompts.parquet`` and
    ``out_dir/summary.json`` (provenance: ``config_hash`` of the data section). Returns the summary."""
    records = load_records(data)
    favour = data.source == "synthetic_v1" and data.v1_flaws
    prepared = prepare_and_validate(records, tokenizer, data.max_tokens, favour, data.require_paired_lengths)
    summary = dict(prepared.summary)
    if favour:
        summary["known_flaws"] = list(KNOWN_FLAWS)
    out = Path(out_dir)
    table = write_parquet(prepared.frame, out / PROMPTS_FILE, prompts_provenance(config_hash), PROMPT_COLUMNS)
    try:
        write_json(summary, out / SUMMARY_FILE, summary_provenance(config_hash))
    except BaseException:
        table.unlink(missing_ok=True)
        raise
    return summary
