"""Controlled synthetic dataset V1, as used for the paper's attribution checks (Sec. 5.4, App. D.1).

Each case of a fictional family comes in a pair: ``<family>_caseNN_resolved`` states the distinguishing
test result as an extra sentence (the clue), ``<family>_caseNN_unresolved`` omits it, so the two
prompts differ in length (the paper aligns them for the paired reference). 960 examples at full size:
120 families x 4 cases x 2 versions, split 640/160/160 with every family inside one split.

KNOWN FLAWS (App. D.1), reproduced when ``reproduce_flaws=True`` (the default, so the paper's audit can
be repeated; the prepare summary lists them under ``known_flaws``):

1. Answer-order shortcut: the test named FIRST in the case is always the test that singles out the
   labelled answer, so the label is predictable from test order without reading the result
   (the ``test_order`` shortcut diagnostic scores 100%).
2. Unjustified target asymmetry: without the result the text does not distinguish the plausible pair,
   yet the targets give the labelled answer 0.15 and the other 0.05 (``targets.py``).

With ``reproduce_flaws=False`` the test order is drawn independently of the label and the unresolved
singleton targets are equal (0.1 each): V1's format with V2's two main fixes.
"""

from __future__ import annotations

from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.common import RecordStyle, RenderedCase, assemble, case_plans, fill
from xurs_pipeline.data.synthetic.families import STATUS_POSITIVE

V1_FAMILIES = (80, 20, 20)
V1_CASES_PER_FAMILY = 4
KNOWN_FLAWS = (
    "test named first in the case identifies the labelled answer (answer-order shortcut)",
    "unequal singleton targets without a distinguishing result (0.15 labelled vs 0.05 other)",
)
CASE_TEMPLATE = (
    "A {age}-year-old patient presents with {symptom}. The {test1} and {test2} tests were ordered.{clue}"
)
CLUE_TEMPLATE = " The {test} test is {status}."


def generate_v1(
    families: tuple[int, int, int] = V1_FAMILIES,
    cases_per_family: int = V1_CASES_PER_FAMILY,
    seed: int = 0,
    reproduce_flaws: bool = True,
) -> list[QuestionRecord]:
    """V1 records: ``sum(families) * cases_per_family * 2``, in split, family, case, version order."""
    records, style = [], RecordStyle("synthetic_v1", favour_label=reproduce_flaws)
    for _split, plan, _rng in case_plans("generate_v1", families, cases_per_family, seed, reproduce_flaws):
        family = plan.family
        test1, test2 = plan.tests_in_order()
        for has_result in (True, False):
            clue = (
                CLUE_TEMPLATE.format(test=family.tests[plan.label % 2], status=STATUS_POSITIVE)
                if has_result
                else ""
            )
            values = {"age": str(plan.age), "symptom": plan.symptom, "test1": test1, "test2": test2}
            text, spans = fill(CASE_TEMPLATE, {**values, "clue": clue})
            start, end = spans["clue"]
            span = (start + 1, end) if has_result else (start, end)  # without the space
            variant = "resolved" if has_result else "unresolved"
            records.append(assemble(plan, style, RenderedCase(plan.case_id, variant, has_result, text, span)))
    return records
