"""Controlled synthetic dataset V2, the revision of App. D.2.

Fixes of V1's flaws and the added controls:

- the order in which the two tests are named is drawn independently of the answer;
- each case appears in the four cyclic arrangements of its options (option k shows base option
  k + r mod 4, ``arrangement`` = r), with targets computed over the arranged options, i.e. remapped so
  the same condition keeps the same mass;
- without a distinguishing result the two plausible singletons get equal targets (0.1 each);
- irrelevant-detail pairs: every case is rendered as a ``morning`` and an ``evening`` visit with
  identical targets;
- families are dealt 80/20/20 to train/dev/test; the case wording comes from templates 0-3 (seen in
  training) or 4-5 (``template_unseen``, only in dev and test);
- the result slot keeps its length: resolved records say the singling-out test is ``positive``,
  unresolved ones say ``pending`` (the other test is ``pending`` in both), so paired prompts can
  tokenise to the same length without alignment (checked by ``pairs.check_pairs``).

Per family and case: train renders one seen template, dev/test one seen and one unseen, each in
2 details x 2 result versions x 4 arrangements. Full size (80/20/20 families, 6 cases) gives
7,680 / 3,840 / 3,840 records; ``families`` and ``cases_per_family`` shrink it for quick runs.
Record id: ``<family>_caseNN_t<template>_<detail>_a<arrangement>_<resolved|unresolved>``.
"""

from __future__ import annotations

from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.common import (
    CasePlan,
    RecordStyle,
    RenderedCase,
    assemble,
    case_plans,
    fill,
)
from xurs_pipeline.data.synthetic.families import (
    STATUS_PENDING,
    STATUS_POSITIVE,
)

V2_FAMILIES = (80, 20, 20)
V2_CASES_PER_FAMILY = 6
STYLE = RecordStyle("synthetic_v2")
DETAILS = ("morning", "evening")
CASE_TEMPLATES = (
    "A {age}-year-old patient attends the clinic this {detail} with {symptom}. "
    "{t1} test: {r1}. {t2} test: {r2}.",
    "This {detail}, a patient aged {age} reports {symptom}. Results: {t1} test {r1}; {t2} test {r2}.",
    "A patient who is {age} years old is seen in the {detail} because of {symptom}. "
    "The {t1} test is {r1} and the {t2} test is {r2}.",
    "Seen during the {detail} clinic, a {age}-year-old adult describes {symptom}. "
    "Reported results: {t1} test {r1}, {t2} test {r2}.",
    # Unseen in training (dev/test only):
    "In the {detail}, a {age}-year-old person arrives complaining of {symptom}. "
    "Findings so far: the {t1} test came back {r1}; the {t2} test came back {r2}.",
    "The {detail} visit concerns a {age}-year-old with {symptom}. "
    "{t1} test result {r1}, while the {t2} test result is {r2}.",
)
SEEN_TEMPLATES = (0, 1, 2, 3)
UNSEEN_TEMPLATES = (4, 5)


def _render(plan: CasePlan, template_id: int, detail: str, has_result: bool) -> tuple[str, tuple[int, int]]:
    """Case text and the span of the distinguishing test's status word (the clue slot)."""
    t1, t2 = plan.tests_in_order()
    decisive_slot = "r1" if plan.first_test == plan.label % 2 else "r2"
    statuses = {"r1": STATUS_PENDING, "r2": STATUS_PENDING}
    if has_result:
        statuses[decisive_slot] = STATUS_POSITIVE
    values = {"age": str(plan.age), "detail": detail, "symptom": plan.symptom, "t1": t1, "t2": t2, **statuses}
    text, spans = fill(CASE_TEMPLATES[template_id], values)
    return text, spans[decisive_slot]


def generate_v2(
    families: tuple[int, int, int] = V2_FAMILIES, cases_per_family: int = V2_CASES_PER_FAMILY, seed: int = 0
) -> list[QuestionRecord]:
    """V2 records (see module docstring), in split, family, case, template, detail, arrangement order."""
    records = []
    for split, plan, rng in case_plans("generate_v2", families, cases_per_family, seed, False):
        templates = [rng.choice(SEEN_TEMPLATES)]
        if split != "train":
            templates.append(rng.choice(UNSEEN_TEMPLATES))
        for template_id in templates:
            for detail in DETAILS:
                for arrangement in range(4):
                    pair_id = f"{plan.case_id}_t{template_id}_{detail}_a{arrangement}"
                    for has_result in (True, False):
                        text, clue = _render(plan, template_id, detail, has_result)
                        variant = "resolved" if has_result else "unresolved"
                        unseen = template_id in UNSEEN_TEMPLATES
                        case = RenderedCase(
                            pair_id, variant, has_result, text, clue, arrangement, template_id, unseen, detail
                        )
                        records.append(assemble(plan, STYLE, case))
    return records
