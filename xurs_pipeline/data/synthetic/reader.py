"""Rule-based reader (App. D.2): re-derive each synthetic record's test results and target from its TEXT.

The reader knows the rule grammar (``families.Family.rules_text``) but nothing of the generator's
state. From the question it parses the rules (which symptom makes which two conditions plausible,
which test points to which conditions), finds the case's symptom and each test's status
(positive/negative/pending), and derives the plausible pair and the option a result singles out.
It then rejects the record unless

- ``has_result`` matches whether the text singles out one option, the label is that option (or one
  of the plausible pair when nothing is singled out),
- ``target_masses`` equal the prescribed masses (``targets.prescribed_masses``) for what it read,
- the clue span holds a positive result exactly when ``has_result``, and V2's detail word is the
  one named in ``detail``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.common import CASE_LABEL
from xurs_pipeline.data.synthetic.families import STATUS_WORDS
from xurs_pipeline.data.synthetic.targets import prescribed_masses
from xurs_pipeline.data.synthetic.v2 import DETAILS

_SYMPTOM_RULE = re.compile(r"(?P<a>[^.]+?) and (?P<b>[^.]+?) both cause (?P<symptom>[^.]+)\.")
_TEST_RULE = re.compile(r"A positive (?P<test>\w+) test points to (?P<a>[^.]+?) or (?P<b>[^.]+?)\.")
_STATUS = "|".join(STATUS_WORDS)


class ReaderRejection(ValueError):
    """The text of a record does not express what the record claims."""


@dataclass(frozen=True)
class Reading:
    """What the text says, in option indices as arranged in the prompt."""

    plausible: tuple[int, int]
    indicated: int | None
    tests: tuple[str, str]  # test names in order of first mention in the case
    statuses: tuple[str | None, str | None]  # status of each test in that order
    symptom: str
    first_test_option: int  # the plausible option the first-named test points to


def read(record: QuestionRecord) -> Reading:
    """Parse a synthetic question; raise :class:`ReaderRejection` when its text does not parse."""
    rules, sep, case = record.question.partition(CASE_LABEL)
    if not sep or not rules.startswith("Rules: "):
        raise ReaderRejection("question has no 'Rules: ...' part followed by a 'Case: ...' part")
    causes, points = _rules(rules, record.options)
    present = [s for s in causes if re.search(rf"\b{re.escape(s)}\b", case)]
    if len(present) != 1 or len(points) != 2:
        raise ReaderRejection(
            f"case must name exactly one ruled symptom (found {present}) and rules two tests"
        )
    plausible = tuple(sorted(causes[present[0]]))
    mentions = {t: re.search(rf"\b{re.escape(t)}\b", case) for t in points}
    if not all(mentions.values()):
        raise ReaderRejection(f"case does not name both tests {sorted(points)}")
    tests = tuple(sorted(points, key=lambda t: mentions[t].start()))  # type: ignore[union-attr]
    statuses = tuple(_status(case, t) for t in tests)
    candidates = set(plausible)
    for test, status in zip(tests, statuses, strict=True):
        if status == "positive":
            candidates &= points[test]
        elif status == "negative":
            candidates -= points[test]
    if not candidates:
        raise ReaderRejection(
            f"test results {dict(zip(tests, statuses, strict=True))} exclude both plausible options"
        )
    first = points[tests[0]] & set(plausible)
    return Reading(
        plausible=plausible,  # type: ignore[arg-type]
        indicated=next(iter(candidates)) if len(candidates) == 1 else None,
        tests=tests,  # type: ignore[arg-type]
        statuses=statuses,  # type: ignore[arg-type]
        symptom=present[0],
        first_test_option=min(first),
    )


def _rules(rules: str, options: tuple[str, ...]) -> tuple[dict[str, tuple[int, int]], dict[str, set[int]]]:
    """The family's rules: the two options each symptom points to, and the two each test points to (option
    indices); ReaderRejection for a sentence that does not parse or names no option."""
    index = {name: k for k, name in enumerate(options)}

    def option(name: str) -> int:
        if name not in index:
            raise ReaderRejection(f"rule names {name!r}, which is not one of the options {list(options)}")
        return index[name]

    causes: dict[str, tuple[int, int]] = {}
    points: dict[str, set[int]] = {}
    for sentence in re.split(r"(?<=\.)\s+", rules.removeprefix("Rules: ").strip()):
        if m := _SYMPTOM_RULE.fullmatch(sentence):
            causes[m["symptom"]] = (option(m["a"]), option(m["b"]))
        elif m := _TEST_RULE.fullmatch(sentence):
            points[m["test"]] = {option(m["a"]), option(m["b"])}
        else:
            raise ReaderRejection(f"cannot parse rule sentence {sentence!r}")
    return causes, points


def _status(case: str, test: str) -> str | None:
    m = re.search(rf"\b{re.escape(test)} test\b[^.;,]*?\b({_STATUS})\b", case)
    return m[1] if m else None


def check(record: QuestionRecord, favour_label: bool) -> Reading:
    """Read ``record`` and compare with its claims; raise :class:`ReaderRejection` on any mismatch."""
    info = record.synthetic
    if info is None:
        raise ReaderRejection("not a synthetic record")
    reading = read(record)
    resolved = reading.indicated is not None
    if resolved != info.has_result:
        raise ReaderRejection(
            f"text {'singles out' if resolved else 'does not single out'} an option, "
            f"but has_result={info.has_result}"
        )
    expected_label_ok = (
        record.answer_idx == reading.indicated if resolved else record.answer_idx in reading.plausible
    )
    if not expected_label_ok:
        raise ReaderRejection(
            f"label {'ABCD'[record.answer_idx]} disagrees with the text (plausible "
            f"{['ABCD'[i] for i in reading.plausible]}, singled out {reading.indicated})"
        )
    expected = prescribed_masses(reading.plausible, reading.indicated, record.answer_idx, favour_label)
    if not np.allclose(info.target_masses, expected, atol=1e-9):
        raise ReaderRejection(
            f"target_masses {list(info.target_masses)} differ from the prescribed {list(expected)}"
        )
    clue = record.question[info.clue_span[0] : info.clue_span[1]]
    if ("positive" in clue) != info.has_result:
        raise ReaderRejection(f"clue span {clue!r} does not match has_result={info.has_result}")
    if info.detail:
        named = [d for d in DETAILS if re.search(rf"\b{d}\b", record.question)]
        if named != [info.detail]:
            raise ReaderRejection(f"detail {info.detail!r} but the text names {named}")
    return reading


@dataclass(frozen=True)
class ReaderReport:
    n_checked: int
    rejections: tuple[tuple[str, str], ...]  # (record_id, reason)
    readings: dict[str, Reading]

    def as_dict(self) -> dict[str, object]:
        return {
            "n_checked": self.n_checked,
            "n_rejected": len(self.rejections),
            "rejections": [list(r) for r in self.rejections[:20]],
        }


def check_all(records: Iterable[QuestionRecord], favour_label: bool) -> ReaderReport:
    """Check every record; collect rejections (record id, reason) instead of stopping at the first."""
    rejections, readings, n = [], {}, 0
    for record in records:
        n += 1
        try:
            readings[record.record_id] = check(record, favour_label)
        except ReaderRejection as err:
            rejections.append((record.record_id, str(err)))
    return ReaderReport(n, tuple(rejections), readings)
