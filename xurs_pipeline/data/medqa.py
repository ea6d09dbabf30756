"""MedQA-USMLE, 4-option format (Sec. 5.1): jsonl files or the Hugging Face hub form.

Each row has ``question``, ``options`` ({"A": ..., "D": ...}), ``answer_idx`` ("A".."D") and optionally
``answer`` (the correct option's text, checked against ``options``) and ``id``. Rows without an ``id``
get ``medqa-<split>-<line>`` (1-based line in the file, or row index + 1 on the hub), so ids say where a
record came from. Every bad row raises :class:`DataError` naming the file and line (or hub split and row).

Carving (documented and seeded): the local copy has no train split, so ``carve="dev"`` divides the dev
file: ids are ranked by ``references.hash_order(ids, seed)`` and the first ``round(train_fraction * n)``
become ``train``, the rest stay ``dev`` (each keeps file order). ``carve="train"`` divides a train split
the same way when dev is missing (e.g. hub copies with only train/test). Test is never touched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from xurs_pipeline.data.config import CARVE_CHOICES
from xurs_pipeline.data.records import DataError, QuestionRecord, has_visible
from xurs_pipeline.data.references import hash_order
from xurs_pipeline.data.schema import OPTION_LETTERS, SPLITS

MEDQA_FILES = "US/4_options/phrases_no_exclude_{split}.jsonl"
HUB_SPLIT_NAMES = {"train": ("train",), "dev": ("validation", "dev"), "test": ("test",)}

Row = tuple[str, str, Any]  # (where, default record id, raw parsed row)


def parse_row(raw: Any, where: str, split: str, default_id: str) -> QuestionRecord:
    """One MedQA row -> :class:`QuestionRecord`; ``where`` ("file:line") prefixes every error."""
    if not isinstance(raw, dict):
        raise DataError(f"{where}: expected a JSON object, found {type(raw).__name__}")
    question = raw.get("question")
    if not isinstance(question, str) or not has_visible(question):
        raise DataError(f"{where}: empty or missing question (field 'question' must be non-empty text)")
    options = raw.get("options")
    if not isinstance(options, dict):
        raise DataError(f"{where}: field 'options' must be an object with keys A, B, C, D")
    missing = [k for k in OPTION_LETTERS if k not in options]
    extra = sorted(k for k in options if k not in OPTION_LETTERS)
    if missing or extra:
        raise DataError(
            f"{where}: options must have exactly the keys A, B, C, D (4-option format); "
            f"missing {missing}, unexpected {extra}"
        )
    texts = tuple(options[k] for k in OPTION_LETTERS)
    bad = [
        k
        for k, text in zip(OPTION_LETTERS, texts, strict=True)
        if not isinstance(text, str) or not has_visible(text)
    ]
    if bad:
        raise DataError(f"{where}: option(s) {bad} empty or not text")
    letter = raw.get("answer_idx")
    if letter not in OPTION_LETTERS:
        raise DataError(f"{where}: answer_idx {letter!r} must be one of 'A', 'B', 'C', 'D'")
    answer = raw.get("answer")
    if answer is not None and answer != options[letter]:
        raise DataError(
            f"{where}: answer {answer!r} is not the text of option {letter} ({options[letter]!r})"
        )
    record_id = raw.get("id", default_id)
    if isinstance(record_id, bool) or not isinstance(record_id, str | int) or not has_visible(str(record_id)):
        raise DataError(f"{where}: id {record_id!r} must be a non-empty string")
    options_named = (("option " + k, options[k]) for k in OPTION_LETTERS)
    named = (("id", str(record_id)), ("question", question), *options_named)
    for name, text in named:
        _check_encodable(text, where, name)
    try:
        return QuestionRecord(
            record_id=str(record_id),
            split=split,
            source="medqa",
            question=question.strip(),
            options=tuple(t.strip() for t in texts),  # type: ignore[arg-type]
            answer_idx=OPTION_LETTERS.index(letter),
        )
    except DataError as err:
        raise DataError(f"{where}: {err}") from err


def _check_encodable(text: str, where: str, name: str) -> None:
    """Refuse text that is not valid Unicode: a JSON-escaped lone surrogate (``"\\ud800"``) decodes to a
    string no encoder accepts, which would fail later in the tokenizer without a file or line."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise DataError(
            f"{where}: {name} holds a lone surrogate {text[err.start]!r} at character {err.start + 1} "
            "(half of a JSON-escaped UTF-16 pair); fix the escape or remove it"
        ) from err


def records_from_rows(rows: Iterable[Row], split: str, seen: dict[str, str]) -> list[QuestionRecord]:
    """Parse rows of one split; ``seen`` maps ids to where they were first read (duplicates raise)."""
    out = []
    for where, default_id, raw in rows:
        record = parse_row(raw, where, split, default_id)
        if record.record_id in seen:
            raise DataError(
                f"{where}: duplicate record id {record.record_id!r} (first seen at {seen[record.record_id]})"
            )
        seen[record.record_id] = where
        out.append(record)
    return out


def iter_jsonl(path: Path, split: str) -> Iterator[Row]:
    """Rows of a jsonl file (blank lines skipped); malformed JSON or text that is not UTF-8 raises
    naming file and line."""
    with path.open("rb") as handle:
        for lineno, raw_line in enumerate(handle, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw_line.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(
                    f"{where}: not UTF-8 text (byte {raw_line[err.start]:#04x} at column {err.start + 1}); "
                    "save the file as UTF-8"
                ) from err
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{where}: malformed JSON line ({err.msg} at column {err.colno})") from err
            yield where, f"medqa-{split}-{lineno:05d}", raw


def carve_split(
    records: list[QuestionRecord], train_fraction: float, seed: int
) -> tuple[list[QuestionRecord], list[QuestionRecord]]:
    """Divide ``records`` into (train, dev) by seeded hash ranking of their ids; file order kept."""
    if not 0.0 < train_fraction < 1.0:
        raise DataError(f"data.medqa_train_fraction={train_fraction}: must be in (0, 1) to carve a split")
    ranked = hash_order([r.record_id for r in records], seed)
    n_train = round(train_fraction * len(records))
    train_ids = set(ranked[:n_train])
    train = [replace(r, split="train") for r in records if r.record_id in train_ids]
    dev = [replace(r, split="dev") for r in records if r.record_id not in train_ids]
    if not train or not dev:
        raise DataError(
            f"carving {len(records)} records with train fraction {train_fraction} leaves an empty split"
        )
    return train, dev


def assemble_splits(
    found: dict[str, list[QuestionRecord]], carve: str, train_fraction: float, seed: int, where: str
) -> list[QuestionRecord]:
    """Apply the carve rule to the splits found at ``where``; missing splits raise naming ``where``."""
    if carve not in CARVE_CHOICES:
        raise DataError(f"data.medqa_carve={carve!r}: must be one of {CARVE_CHOICES}")
    if carve:
        target = "dev" if carve == "train" else "train"
        if carve not in found:
            raise DataError(
                f"MedQA split {carve!r} not found at {where}, so it cannot be carved (data.medqa_carve)"
            )
        if target in found:
            raise DataError(
                f"data.medqa_carve={carve!r} would make a {target} split, but {where} already has one; "
                "set data.medqa_carve='' to use it"
            )
        train, dev = carve_split(found.pop(carve), train_fraction, seed)
        found["train"], found["dev"] = train, dev
    missing = [s for s in SPLITS if s not in found]
    if missing:
        files = [where.replace("{split}", s) for s in missing] if "{split}" in where else []
        raise DataError(
            f"MedQA split(s) {missing} not found at {where}{f' (no file {files})' if files else ''}. "
            "The paper's experiments use MedQA's own train/dev/test split (Sec. 5.1: 10,178 / 1,272 / "
            "1,273): supply the missing file(s), or carve a seeded train/dev split out of the dev file "
            "with data.medqa_carve=dev (data=medqa_carved), a deviation the tables then state."
        )
    return [r for split in SPLITS for r in found[split]]


def require_medqa_dir(root: str | Path, files: str = MEDQA_FILES) -> Path:
    """``root`` when it is a directory holding ``files`` for at least one split; else a one-line
    :class:`DataError` naming the key (``data.medqa_path`` or ``data.medqa_files``) and what to put there."""
    root = Path(root)
    if "{split}" not in files:
        raise DataError(f"data.medqa_files={files!r}: must contain '{{split}}'")
    if not root.is_dir():
        raise DataError(
            f"data.medqa_path={str(root)!r}: no such directory; put your MedQA-format jsonl files there "
            "(one per split, named by data.medqa_files) or set data.medqa_path to their directory"
        )
    if not any((root / files.format(split=s)).is_file() for s in SPLITS):
        raise DataError(
            f"data.medqa_files={files!r}: no such file for any split {list(SPLITS)} in "
            f"data.medqa_path={str(root)!r} ({root / files})"
        )
    return root


def load_medqa_dir(
    root: str | Path, files: str = MEDQA_FILES, carve: str = "", train_fraction: float = 0.8, seed: int = 0
) -> list[QuestionRecord]:
    """All MedQA records under ``root`` (``files`` with ``{split}`` filled in), in split then file order."""
    root = require_medqa_dir(root, files)
    found: dict[str, list[QuestionRecord]] = {}
    seen: dict[str, str] = {}
    for split in SPLITS:
        path = root / files.format(split=split)
        if path.is_file():
            found[split] = records_from_rows(iter_jsonl(path, split), split, seen)
            if not found[split]:
                raise DataError(
                    f"{path}: no records (an empty {split} split); expected one JSON object a line"
                )
    return assemble_splits(found, carve, train_fraction, seed, where=str(root / files))


def load_medqa_hub(
    name: str, carve: str = "", train_fraction: float = 0.8, seed: int = 0
) -> list[QuestionRecord]:
    """MedQA from the Hugging Face hub (needs network and the ``datasets`` package)."""
    try:
        import datasets
    except ImportError as err:
        raise DataError(
            f"data.medqa_hub={name!r}: reading the hub form needs the `datasets` package "
            "(pip install datasets); or download the jsonl files and set data.medqa_path"
        ) from err
    available = list(datasets.get_dataset_split_names(name))
    found: dict[str, list[QuestionRecord]] = {}
    seen: dict[str, str] = {}
    for split in SPLITS:
        hub_split = next((h for h in HUB_SPLIT_NAMES[split] if h in available), None)
        if hub_split is None:
            continue
        rows = (
            (f"{name}[{hub_split}] row {i + 1}", f"medqa-{split}-{i + 1:05d}", dict(raw))
            for i, raw in enumerate(datasets.load_dataset(name, split=hub_split))
        )
        found[split] = records_from_rows(rows, split, seen)
    return assemble_splits(
        found, carve, train_fraction, seed, where=f"hub dataset {name!r} (splits {available})"
    )


def split_deviation(source: str, carve: str, train_fraction: float) -> str:
    """How a MedQA experiment's splits differ from the paper's (Sec. 5.1); "" when they do not."""
    if source != "medqa" or not carve:
        return ""
    made = "train" if carve == "dev" else "dev"
    return (
        f"MedQA {made} split carved from the {carve} file (data.medqa_carve={carve}, seeded, "
        f"train fraction {train_fraction:g}), not MedQA's own 10,178 / 1,272 / 1,273 split (Sec. 5.1)"
    )
