"""In-memory question records (before tokenisation) and the error every bad input raises.

Every record is checked on construction: visible text (whitespace, zero-width and other format
characters, blank-rendering letters such as the Braille blank and the Hangul fillers, and lone combining
marks do not count), four distinct options, no line that imitates the prompt layout (``"\nB. ..."``,
``"\nAnswer: B"``, which would let a question or option forge further options or the answer). Lines are
split on every Unicode line break (``str.splitlines``: ``\r``, ``\u2028``, ``\x85``...), and each line's
start is stripped of whitespace and invisible characters and NFKC-normalised (fullwidth letters, no-break
spaces) before it is matched.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from xurs_pipeline.data.config import SOURCES
from xurs_pipeline.data.schema import SPLITS
from xurs_pipeline.errors import XursError


class DataError(XursError, ValueError):
    """Bad input data: names the file and line (or the record id) and what is allowed."""


# A line that starts like the prompt's own option labels or answer prefix (``prompt.py``), matched on
# the line's NFKC form after its invisible start (see ``format_line``) is removed.
PROMPT_FORMAT_LINE = re.compile(r"(?:[A-D]\.(?:\s|$)|answer\s*:)", re.IGNORECASE)
# Letters that render as blank space but are not whitespace or format characters: the Braille blank,
# the Hangul fillers, the Khmer inherent vowels, the Mongolian vowel separator (Cf in older Unicode).
BLANK_LETTERS = frozenset("\u2800\u3164\u115f\u1160\uffa0\u17b4\u17b5\u180e")


def _invisible(c: str, marks: bool = True) -> bool:
    """Whether ``c`` renders as nothing: whitespace, a format character (category Cf: zero-width space,
    joiners, BOM...), a blank-rendering letter, or (``marks``) a combining mark (category M)."""
    category = unicodedata.category(c)
    return c.isspace() or category == "Cf" or c in BLANK_LETTERS or (marks and category[0] == "M")


def visible(text: str) -> str:
    """``text`` without the characters that render as nothing (:func:`_invisible`), so a question of
    zero-width spaces, Braille blanks, Hangul fillers or lone combining marks is "empty"."""
    return "".join(c for c in text if not _invisible(c))


def has_visible(text: str) -> bool:
    """Whether ``text`` has a character that renders (``visible(text) != ""``), stopping at the first."""
    return any(not _invisible(c) for c in text)


def normalised(text: str) -> str:
    """Comparison form of a question or option: visible words joined by single spaces, casefolded
    (combining marks kept: options that differ only in an accent differ)."""
    words = ("".join(c for c in word if not _invisible(c, marks=False)) for word in text.split())
    return " ".join(filter(None, words)).casefold()


def format_line(text: str) -> str | None:
    """The first line of ``text`` after its first that imitates the prompt format (``"B. ..."``,
    ``"Answer: ..."``), shown as its visible start, or None. Every Unicode line break splits lines, and a
    line's leading whitespace and invisible characters are dropped (NFKC form) before matching."""
    for line in text.splitlines()[1:]:
        line = unicodedata.normalize("NFKC", line)
        start = "".join(c for c in line if c.isspace() or not _invisible(c, marks=False)).lstrip()
        found = PROMPT_FORMAT_LINE.match(start)
        if found:
            return found.group().strip()
    return None


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
        if not has_visible(self.question):
            raise DataError(f"{where}: empty question (no visible character)")
        empty = [i for i, text in enumerate(self.options) if not has_visible(text)]
        if empty:
            raise DataError(f"{where}: empty option text at {['ABCD'[i] for i in empty]}")
        forms = [normalised(text) for text in self.options]
        same = [f"{'ABCD'[i]}={'ABCD'[forms.index(f)]}" for i, f in enumerate(forms) if forms.index(f) != i]
        if same:
            raise DataError(f"{where}: identical option texts ({', '.join(same)}): options must differ")
        for name, text in (("question", self.question), *zip("ABCD", self.options, strict=True)):
            found = format_line(text)
            if found is not None:
                raise DataError(
                    f"{where}: {'the question' if name == 'question' else f'option {name}'} contains a line "
                    f"imitating the prompt format ({found!r}...): it would forge options or the answer in "
                    "the prompt"
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
