"""In-memory question records (before tokenisation) and the error every bad input raises.

Every record is checked on construction: visible text (zero-width and other format characters do
not count), four distinct options, no line that imitates the prompt layout (``"\nB. ..."``,
``"\nAnswer: B"``, which would let a question or option forge further options or the answer).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from xurs_pipeline.data.schema import SOURCES, SPLITS
from xurs_pipeline.errors import XursError


class DataError(XursError, ValueError):
    """Bad input data: names the file and line (or the record id) and what is allowed."""


# A line that starts like the prompt's own option labels or answer prefix (``prompt.py``).
PROMPT_FORMAT_LINE = re.compile(r"\n[ \t]*(?:[A-D]\.[ \t]|Answer[ \t]*:)")


def visible(text: str) -> str:
    """``text`` without whitespace and format characters (category Cf: zero-width space, joiners,
    BOM...), which render as nothing: the check for "empty" text."""
    return "".join(c for c in text if not c.isspace() and unicodedata.category(c) != "Cf")


def normalised(text: str) -> str:
    """Comparison form of a question or option: visible words joined by single spaces, casefolded."""
    return " ".join(filter(None, (visible(word) for word in text.split()))).casefold()


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
    # Two-cue data (``synthetic/swap.py``): each cue's named span in ``question``, the option each cue's
    # role labels, whether it resolves the question, and that role's prescribed (15,) masses.
    cue_spans: tuple[tuple[int, int], ...] = ()
    cue_answers: tuple[int, ...] = ()
    cue_resolved: tuple[bool, ...] = ()
    cue_masses: tuple[tuple[float, ...], ...] = ()


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
        if not visible(self.question):
            raise DataError(f"{where}: empty question (no visible character)")
        empty = [i for i, text in enumerate(self.options) if not visible(text)]
        if empty:
            raise DataError(f"{where}: empty option text at {['ABCD'[i] for i in empty]}")
        forms = [normalised(text) for text in self.options]
        same = [f"{'ABCD'[i]}={'ABCD'[forms.index(f)]}" for i, f in enumerate(forms) if forms.index(f) != i]
        if same:
            raise DataError(f"{where}: identical option texts ({', '.join(same)}): options must differ")
        for name, text in (("question", self.question), *zip("ABCD", self.options, strict=True)):
            found = PROMPT_FORMAT_LINE.search(text)
            if found:
                raise DataError(
                    f"{where}: {'the question' if name == 'question' else f'option {name}'} contains a line "
                    f"imitating the prompt format ({found.group().strip()!r}...): it would forge options "
                    "or the answer in the prompt"
                )


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
