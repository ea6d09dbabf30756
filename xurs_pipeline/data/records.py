"""In-memory question records (before tokenisation) and the error every bad input raises."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xurs_pipeline.errors import XursError
from xurs_pipeline.data.schema import SOURCES, SPLITS


class DataError(XursError, ValueError):
    """Bad input data: names the file and line (or the record id) and what is allowed."""


@dataclass(frozen=True)
class SyntheticInfo:
    """What the synthetic generators know about a record (Sec. 5.4, App. D).

    ``clue_span`` and ``case_span`` are character spans ``(start, end)`` into the record's ``question``:
    the distinguishing-result slot and the patient case description. ``target_masses`` are the
    prescribed masses of the 15 focal sets in ``credal.FOCAL_SETS`` order over the options as arranged.
    """

    family: str
    pair_id: str
    variant: str
    has_result: bool
    target_masses: tuple[float, ...]
    clue_span: tuple[int, int]
    case_span: tuple[int, int]
    template_id: int = 0
    template_unseen: bool = False
    arrangement: int = 0
    detail: str = ""


@dataclass(frozen=True)
class QuestionRecord:
    """One four-option question. ``instruction`` is text placed before the question (template section)."""

    record_id: str
    split: str
    source: str
    question: str
    options: tuple[str, str, str, str]
    answer_idx: int
    instruction: str = ""
    synthetic: SyntheticInfo | None = None

    def __post_init__(self) -> None:
        where = f"record {self.record_id!r}"
        if self.split not in SPLITS:
            raise DataError(f"{where}: split {self.split!r} must be one of {SPLITS}")
        if self.source not in SOURCES:
            raise DataError(f"{where}: source {self.source!r} must be one of {SOURCES}")
        if len(self.options) != 4:
            raise DataError(f"{where}: needs exactly 4 options, has {len(self.options)}")
        if not 0 <= self.answer_idx < 4:
            raise DataError(f"{where}: answer_idx {self.answer_idx} must be in 0..3")
        if not self.question.strip():
            raise DataError(f"{where}: empty question")
        empty = [i for i, text in enumerate(self.options) if not text.strip()]
        if empty:
            raise DataError(f"{where}: empty option text at {['ABCD'[i] for i in empty]}")


def check_unique_ids(records: Iterable[QuestionRecord]) -> None:
    """Raise :class:`DataError` naming the first duplicated record id (and both splits)."""
    seen: dict[str, QuestionRecord] = {}
    for record in records:
        first = seen.get(record.record_id)
        if first is not None:
            raise DataError(
                f"duplicate record id {record.record_id!r} (splits {first.split!r} and {record.split!r}); "
                "record ids must be unique across all splits"
            )
        seen[record.record_id] = record
