"""What V1 and V2 share: a case plan, span-tracking template filling, and record assembly."""

from __future__ import annotations

import random
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from xurs_pipeline.data.records import QuestionRecord, SyntheticInfo
from xurs_pipeline.data.synthetic.families import INSTRUCTION, Family, make_families, split_families
from xurs_pipeline.data.synthetic.targets import prescribed_masses

CASE_LABEL = "\nCase: "


@dataclass(frozen=True)
class CasePlan:
    """One patient case of a family before rendering.

    ``label`` is the family index (0..3) of the labelled condition; its symptom group is ``label // 2``
    and the test that singles it out is ``label % 2``. ``first_test`` (0 = X, 1 = Y) is the test named
    first in the case. ``base_order`` lists family condition indices in option order A..D.
    """

    family: Family
    split: str
    index: int
    label: int
    age: int
    first_test: int
    base_order: tuple[int, int, int, int]

    @property
    def case_id(self) -> str:
        return f"{self.family.name}_case{self.index:02d}"

    @property
    def symptom(self) -> str:
        return self.family.symptoms[self.label // 2]

    def tests_in_order(self) -> tuple[str, str]:
        x, y = self.family.tests
        return (x, y) if self.first_test == 0 else (y, x)


def plan_case(
    family: Family, split: str, index: int, rng: random.Random, first_test_is_label: bool
) -> CasePlan:
    """Draw one case: the label, age, option order and (unless tied to the label) the test order."""
    label = rng.randrange(4)
    order = [0, 1, 2, 3]
    rng.shuffle(order)
    first_test = label % 2 if first_test_is_label else rng.randrange(2)
    return CasePlan(family, split, index, label, rng.randint(18, 80), first_test, tuple(order))  # type: ignore[arg-type]


def case_plans(
    name: str, families: tuple[int, int, int], cases_per_family: int, seed: int, first_test_is_label: bool
) -> Iterator[tuple[str, CasePlan, random.Random]]:
    """Yield ``(split, plan, rng)`` for every case, in split, family, case order, from one seeded ``rng``.

    The caller may draw more from ``rng`` between cases (V2 picks templates): the draws stay in one order.
    """
    if min(families) < 1 or cases_per_family < 1:
        raise ValueError(f"{name}: families={families} and cases_per_family={cases_per_family} must be >= 1")
    rng = random.Random(seed)
    by_split = split_families(make_families(sum(families), rng), tuple(families), rng)  # type: ignore[arg-type]
    for split, members in by_split.items():
        for family in members:
            for index in range(cases_per_family):
                yield (
                    split,
                    plan_case(family, split, index, rng, first_test_is_label=first_test_is_label),
                    rng,
                )


def fill(template: str, values: Mapping[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """Fill ``{field}`` placeholders; return the text and the character span of each field."""
    parts: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    pos = 0
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        parts.append(literal)
        pos += len(literal)
        if field is not None:
            value = values[field]
            spans[field] = (pos, pos + len(value))
            parts.append(value)
            pos += len(value)
    return "".join(parts), spans


@dataclass(frozen=True)
class RecordStyle:
    """How a generator turns its cases into records (one per data set): the ``source`` name, whether the
    prescribed masses favour the label (V1's reproduced flaw), the family's rules before the case
    (``with_rules``) and the instruction."""

    source: str
    favour_label: bool = False
    with_rules: bool = True
    instruction: str = INSTRUCTION


@dataclass(frozen=True)
class RenderedCase:
    """One rendered variant of a case: its pair and variant (the record id is ``<pair_id>_<variant>``),
    whether it states the result, the case text and the clue's span in it; V2's option arrangement,
    wording template and irrelevant detail; ``plausible`` names two family conditions as the plausible
    pair instead of the label's symptom group."""

    pair_id: str
    variant: str
    has_result: bool
    case_text: str
    clue_span: tuple[int, int]
    arrangement: int = 0
    template_id: int = 0
    template_unseen: bool = False
    detail: str = ""
    plausible: tuple[int, int] | None = None


def assemble(plan: CasePlan, style: RecordStyle, case: RenderedCase) -> QuestionRecord:
    """The record of one rendered case. ``case.clue_span`` is relative to ``case.case_text``; options are
    ``plan.base_order`` shifted cyclically by ``case.arrangement`` (option k shows base option k + r mod
    4). The plausible pair is the label's symptom group unless ``case.plausible`` names two family
    conditions; the question is the family's rules, ``CASE_LABEL`` and the case, or the case alone
    (``style.with_rules=False``)."""
    order = [plan.base_order[(k + case.arrangement) % 4] for k in range(4)]
    position = {condition: k for k, condition in enumerate(order)}
    group = plan.label // 2
    pair = case.plausible or (2 * group, 2 * group + 1)
    plausible = (position[pair[0]], position[pair[1]])
    answer = position[plan.label]
    masses = prescribed_masses(plausible, answer if case.has_result else None, answer, style.favour_label)
    rules = plan.family.rules_text() + CASE_LABEL if style.with_rules else ""
    start = len(rules)
    info = SyntheticInfo(
        family=plan.family.name,
        pair_id=case.pair_id,
        variant=case.variant,
        has_result=case.has_result,
        target_masses=masses,
        clue_span=(start + case.clue_span[0], start + case.clue_span[1]),
        case_span=(start, start + len(case.case_text)),
        template_id=case.template_id,
        template_unseen=case.template_unseen,
        arrangement=case.arrangement,
        detail=case.detail,
    )
    return QuestionRecord(
        record_id=f"{case.pair_id}_{case.variant}",
        split=plan.split,
        source=style.source,
        question=rules + case.case_text,
        options=tuple(plan.family.conditions[i] for i in order),  # type: ignore[arg-type]
        answer_idx=answer,
        instruction=style.instruction,
        synthetic=info,
    )
