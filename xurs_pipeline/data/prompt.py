"""Prompt text with the character span of every section (Sec. 5.1): question, lettered options, ``Answer:``.

The layout (``lm-evaluation-harness`` style), with the section of each piece::

    [instruction "\\n\\n"]      template (synthetic instructions; empty for MedQA)
    "Question: "                template
    question                    question
    "\\n"                        template
    "A."  " "  option A text    option_label, template, option_A      (likewise B, C, D)
    "\\n"                        template
    "Answer:"                   answer_prefix

The prompt ends right after ``Answer:``. The section of every character is known by construction, so
token sections follow from the tokenizer's offsets (``sections.py``) without re-parsing the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from xurs_pipeline.data.schema import OPTION_LETTERS, OPTION_SECTIONS

QUESTION_LABEL = "Question: "
ANSWER_PREFIX = "Answer:"


@dataclass(frozen=True)
class Piece:
    section: str
    start: int
    end: int


@dataclass(frozen=True)
class FormattedPrompt:
    """Prompt text and its sections as contiguous character spans covering the whole text."""

    text: str
    pieces: tuple[Piece, ...]
    question_start: int  # character offset of the question text in ``text``

    def span_of(self, section: str) -> tuple[int, int]:
        """(start, end) of the single piece labelled ``section`` (question, option_X, answer_prefix)."""
        found = [p for p in self.pieces if p.section == section]
        if len(found) != 1:
            raise KeyError(f"section {section!r} occurs {len(found)} times in the prompt; expected once")
        return found[0].start, found[0].end


def format_prompt(question: str, options: tuple[str, ...], instruction: str = "") -> FormattedPrompt:
    """Build the prompt for one question; options in order A..D."""
    parts: list[tuple[str, str]] = []
    if instruction:
        parts.append(("template", instruction + "\n\n"))
    parts += [("template", QUESTION_LABEL), ("question", question), ("template", "\n")]
    for letter, section, text in zip(OPTION_LETTERS, OPTION_SECTIONS, options, strict=True):
        parts += [("option_label", f"{letter}."), ("template", " "), (section, text), ("template", "\n")]
    parts.append(("answer_prefix", ANSWER_PREFIX))
    pieces, offset, question_start = [], 0, -1
    for section, text in parts:
        if section == "question":
            question_start = offset
        pieces.append(Piece(section, offset, offset + len(text)))
        offset += len(text)
    return FormattedPrompt("".join(t for _, t in parts), tuple(pieces), question_start)
