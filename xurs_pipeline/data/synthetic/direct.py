"""Controlled synthetic dataset "direct": the result names the condition (the positive control's data).

V1 and V2 (Sec. 5.4, App. D) hide the answer behind two hops of in-context reading over invented names
(symptom -> plausible pair, test -> member), which SmolLM2-135M cannot do (BENCHMARKS.md). Here the clue
names the answer outright, so a small model can learn to use it, and the clue is still known by
construction::

    A 48-year-old patient presents with hiccups. The Muzex test is positive for Favix disease.
                                                                                `-- clue --'

Its result-free partner names two conditions, in random order, one of them the label::

    A 48-year-old patient presents with hiccups. The Muzex test is positive for Favix disease or Dramox
    syndrome.

so without the clue the model can only narrow the answer to a pair: prescribed masses (``targets.py``)
m({answer}) = 0.9, m({pair}) = 0.1 with the result (width 0.1), m({p}) = m({q}) = 0.1, m({pair}) = 0.8
without (width 0.8). Every case has the result; every ``pair_every``-th case (index 0, k, 2k, ... of its
family) also has the partner, which the clue study uses as the aligned paired reference (Sec. 5.4).
Conditions, tests and names come from the same seeded families as V1 and V2 (unique names; families never
shared between splits, so dev and test names are unseen in training). Labels are drawn uniformly.
"""

from __future__ import annotations

import random
import re

from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.common import RecordStyle, RenderedCase, assemble, case_plans, fill

DIRECT_INSTRUCTION = (
    "The conditions and tests below are fictional. Use only the stated result to choose the condition."
)
STYLE = RecordStyle("synthetic_direct", with_rules=False, instruction=DIRECT_INSTRUCTION)
CASE_TEMPLATE = "A {age}-year-old patient presents with {symptom}.{clue}"
RESULT_TEMPLATE = " The {test} test is positive for {named}."
_NAMED = re.compile(r"The (?P<test>\w+) test is positive for (?P<named>[^.]+)\.")


def generate_direct(
    families: tuple[int, int, int], cases_per_family: int, seed: int = 0, pair_every: int = 1
) -> list[QuestionRecord]:
    """Direct-clue records in split, family, case order; each case's partner follows it."""
    if pair_every < 1:
        raise ValueError(f"data.pair_every={pair_every}: must be >= 1")
    records = []
    for _split, plan, rng in case_plans("generate_direct", families, cases_per_family, seed, False):
        conditions = plan.family.conditions
        labelled = conditions[plan.label]
        other = conditions[_other(plan.label, rng)]
        pair = [labelled, other]
        rng.shuffle(pair)
        variants = [(True, labelled)]
        if plan.index % pair_every == 0:
            variants.append((False, " or ".join(pair)))
        for has_result, named in variants:
            clue = RESULT_TEMPLATE.format(test=plan.family.tests[0], named=named)
            values = {"age": str(plan.age), "symptom": plan.symptom, "clue": clue}
            text, spans = fill(CASE_TEMPLATE, values)
            start = spans["clue"][0] + clue.rindex(named)  # the clue is the named condition(s)
            variant = "resolved" if has_result else "unresolved"
            clue_span = (start, start + len(named))
            plausible = (plan.label, conditions.index(other))
            case = RenderedCase(plan.case_id, variant, has_result, text, clue_span, plausible=plausible)
            records.append(assemble(plan, STYLE, case))
    return records


def _other(label: int, rng: random.Random) -> int:
    """A condition index other than ``label``, uniformly."""
    return rng.choice([k for k in range(4) if k != label])


def read_direct(record: QuestionRecord) -> tuple[int, ...]:
    """Option indices the record's result names (one with the result, two without); ValueError when the
    text names no option or the record's label is not among them (the direct reader of App. D.2)."""
    found = _NAMED.search(record.question)
    if found is None:
        raise ValueError("question states no 'The <test> test is positive for <condition>.' result")
    named = found["named"].split(" or ")
    missing = [n for n in named if n not in record.options]
    if missing:
        raise ValueError(f"result names {missing}, which are not options {list(record.options)}")
    indices = tuple(record.options.index(n) for n in named)
    if record.answer_idx not in indices:
        raise ValueError(f"label {'ABCD'[record.answer_idx]} is not among the named options {named}")
    return indices
