"""Controlled synthetic dataset "swap": two cues of the same form, the label following one of them.

The two-cue swap control (docs/swap-control.md). Every case states two test results of the same form::

    A patient presents with hiccups. The blood test is positive for Favix disease. The urine test is
    positive for Dramox syndrome or Keltor palsy.
                                     `- cue 1 --'                                      `------ cue 2 -------'

Cue ``k`` names its own label ``label_k`` (resolved) or a pair holding it (unresolved, random order), and the
two labels and the two resolved flags are drawn independently. The text is the same for both roles; the
record carries each role's answer, resolved flag and prescribed masses (``cue_answers``, ``cue_resolved``,
``cue_masses``), and ``answer_idx``/``target_masses`` follow cue 1 (training set A). Set B is the same
records labelled by cue 2 (``relabel_by_cue``): in A cue 2 names conditions at random,
in B cue 1 does.

Test families hold, at case index 0, a probe: both cues unresolved and sharing the label ``P`` (cue 1
"P or Q", cue 2 "P or R", Q != R), so the probe's answer and text are the same under both roles and only
what each model learned tells the cues apart. Every other test case has at least one cue resolved, so the
probes are exactly the test records without a result (``has_result``: some cue resolves the question).
``cue_spans`` are the character spans of each cue's named condition(s) in ``question`` (as ``clue_span``
is for the direct data; ``clue_span`` is cue 1's).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from xurs_pipeline.data.config import SWAP_ORDERS
from xurs_pipeline.data.records import DataError, QuestionRecord, SyntheticInfo
from xurs_pipeline.data.synthetic.common import CasePlan, case_plans, fill
from xurs_pipeline.data.synthetic.targets import prescribed_masses

SWAP_INSTRUCTION = "The conditions and tests below are fictional."
CASE_TEMPLATE = "A patient presents with {symptom}.{cue1}{cue2}"
CASE_TEMPLATE_CUE2_FIRST = "A patient presents with {symptom}.{cue2}{cue1}"  # the sentence-order control
CUE_TEMPLATES = (" The blood test is positive for {named}.", " The urine test is positive for {named}.")
PROBE_EVERY = 4  # test case index 0, 4, ... of a family is a probe
# data.swap_order: ``fixed`` states every question's cues in one order (cue 1 first unless ``cue2_first``);
# ``counterbalanced`` states cue 2 first in every other case, alternating by family and case (half of each
# split's texts, half of its probes: family by family, since a family's probe is its case 0).


def generate_swap(
    families: tuple[int, int, int],
    cases_per_family: int,
    seed: int = 0,
    resolved_share: float = 0.5,
    cue2_first: bool = False,
    order: str = "fixed",
) -> list[QuestionRecord]:
    """Two-cue records in split, family, case order (see the module docstring). ``cue2_first`` states cue 2
    before cue 1 in every question, ``order="counterbalanced"`` in every other one (``SWAP_ORDERS``): the
    same draws, labels and roles; only the sentence order changes."""
    if not 0.0 < resolved_share < 1.0:
        raise ValueError(f"swap data: resolved_share={resolved_share} must be in (0, 1)")
    if order not in SWAP_ORDERS or (cue2_first and order != "fixed"):
        raise ValueError(f"swap data: order={order!r} must be one of {SWAP_ORDERS}; cue2_first needs 'fixed'")
    records, family_number = [], {"train": -1, "dev": -1, "test": -1}
    for split, plan, rng in case_plans("generate_swap", families, cases_per_family, seed, False):
        family_number[split] += plan.index == 0
        flipped = cue2_first or (order == "counterbalanced" and (family_number[split] + plan.index) % 2 == 1)
        case_template = CASE_TEMPLATE_CUE2_FIRST if flipped else CASE_TEMPLATE
        probe = split == "test" and plan.index % PROBE_EVERY == 0
        if probe:
            labels = (plan.label, plan.label)
            others = rng.sample([k for k in range(4) if k != plan.label], 2)
            cues = tuple(_pair(plan.label, o, rng) for o in others)
        else:
            labels = (plan.label, rng.randrange(4))
            resolved = [rng.random() < resolved_share for _ in range(2)]
            while split == "test" and not any(resolved):  # a test case without a result is a probe
                resolved = [rng.random() < resolved_share for _ in range(2)]
            cues = tuple(
                [label] if r else _pair(label, _other(label, rng), rng)
                for label, r in zip(labels, resolved, strict=True)
            )
        symptom = plan.family.symptoms[rng.randrange(2)]  # not tied to either label
        records.append(_record(plan, labels, cues, symptom, "probe" if probe else "case", case_template))
    return records


def cue_order(cue_positions: tuple[list[int], list[int]] | list) -> int:
    """Which cue a prepared question states first (1 or 2), from its two cues' token positions."""
    return 1 if min(cue_positions[0]) < min(cue_positions[1]) else 2


def _other(label: int, rng: random.Random) -> int:
    return rng.choice([k for k in range(4) if k != label])


def _pair(label: int, other: int, rng: random.Random) -> list[int]:
    pair = [label, other]
    rng.shuffle(pair)
    return pair


def _record(
    plan: CasePlan,
    labels: tuple[int, int],
    cues: tuple[list[int], ...],
    symptom: str,
    variant: str,
    case_template: str,
) -> QuestionRecord:
    """One rendered case: ``labels`` and ``cues`` (the family condition indices each cue names)."""
    conditions = plan.family.conditions
    named = [" or ".join(conditions[c] for c in cue) for cue in cues]
    values = {"symptom": symptom}
    for k, (template, names) in enumerate(zip(CUE_TEMPLATES, named, strict=True)):
        values[f"cue{k + 1}"] = template.format(named=names)
    text, spans = fill(case_template, values)
    starts = [spans[f"cue{k + 1}"][0] + values[f"cue{k + 1}"].rindex(n) for k, n in enumerate(named)]
    cue_spans = tuple((s, s + len(n)) for s, n in zip(starts, named, strict=True))
    order = list(plan.base_order)  # option k shows family condition order[k]
    answers = tuple(order.index(label) for label in labels)
    masses = tuple(_masses(cue, label, order) for cue, label in zip(cues, labels, strict=True))
    resolved = tuple(len(cue) == 1 for cue in cues)
    info = SyntheticInfo(
        family=plan.family.name,
        pair_id=plan.case_id,
        variant=variant,
        has_result=any(resolved),
        target_masses=masses[0],
        clue_span=cue_spans[0],
        case_span=(0, len(text)),
        cue_spans=cue_spans,
        cue_answers=answers,
        cue_resolved=resolved,
        cue_masses=masses,
    )
    return QuestionRecord(
        record_id=f"{plan.case_id}_{variant}",
        split=plan.split,
        source="synthetic_swap",
        question=text,
        options=tuple(conditions[i] for i in order),  # type: ignore[arg-type]
        answer_idx=answers[0],
        instruction=SWAP_INSTRUCTION,
        synthetic=info,
    )


def _masses(cue: list[int], label: int, order: list[int]) -> tuple[float, ...]:
    """(15,) prescribed masses of one role: its cue resolves the label, or narrows it to the cue's pair
    (the pair of a resolved cue is the label and a fixed other option, which only sets m(pair) = 0.1)."""
    answer = order.index(label)
    pair = cue if len(cue) == 2 else [label, next(k for k in range(4) if k != label)]
    plausible = (order.index(pair[0]), order.index(pair[1]))
    return prescribed_masses(plausible, answer if len(cue) == 1 else None, answer)


_CUE = re.compile(r"The (?P<test>blood|urine) test is positive for (?P<named>[^.]+)\.")
_CUE_OF_TEST = {"blood": 0, "urine": 1}  # cue 1 is the blood test wherever the question states it


def read_swap(record: QuestionRecord) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Option indices each cue names; ValueError when the question does not state two cues, a cue names
    something that is not an option, or a role's answer is not among its cue's names (or a resolved cue
    names more than one option): the two-cue reader."""
    matches = sorted(_CUE.finditer(record.question), key=lambda m: _CUE_OF_TEST[m["test"]])
    found = [m["named"].split(" or ") for m in matches]
    if [m["test"] for m in matches] != ["blood", "urine"]:
        raise ValueError(
            f"question states {[m['test'] for m in matches]} test results; the two-cue data needs one blood "
            "and one urine test"
        )
    info = record.synthetic
    named = []
    for k, names in enumerate(found):
        missing = [n for n in names if n not in record.options]
        if missing:
            raise ValueError(f"cue {k + 1} names {missing}, which are not options {list(record.options)}")
        indices = tuple(record.options.index(n) for n in names)
        if info is None or info.cue_answers[k] not in indices or (len(indices) == 1) != info.cue_resolved[k]:
            raise ValueError(
                f"cue {k + 1} names {names}, which do not fit its role's label and resolved flag"
            )
        named.append(indices)
    return named[0], named[1]


def relabel_by_cue(prompts: pd.DataFrame, cue: int) -> pd.DataFrame:
    """The prepared two-cue prompts labelled by cue ``cue`` (1: set A, as prepared; 2: set B): answer_idx,
    target_masses and clue_positions become that cue's role; the texts, tokens and ``has_result`` (some cue
    resolves the question, a property of the text) stay."""
    return relabel_by_cues(prompts, [cue] * len(prompts))


def relabel_by_cues(prompts: pd.DataFrame, cues: Sequence[int]) -> pd.DataFrame:
    """``relabel_by_cue`` with one cue (1 or 2) per row of ``prompts`` (``cues``, len(prompts))."""
    missing = [c for c in ("cue_answers", "cue_masses", "cue_resolved", "cue_positions") if c not in prompts]
    if missing:
        raise DataError(
            f"prepared prompts lack {missing}: relabelling by cue needs data.source=synthetic_swap"
        )
    bad = sorted(set(cues) - {1, 2})
    if bad or len(cues) != len(prompts):
        raise DataError(f"cues {bad or len(cues)}: the two-cue data has cues 1 and 2, one per prompt")
    out = prompts.copy()
    rows = zip(cues, prompts["cue_answers"], prompts["cue_masses"], prompts["cue_positions"], strict=True)
    labelled = [(int(a[c - 1]), list(m[c - 1]), list(p[c - 1])) for c, a, m, p in rows]
    for j, column in enumerate(("answer_idx", "target_masses", "clue_positions")):
        out[column] = [row[j] for row in labelled]
    return out


def hashed_cues(record_ids: Sequence[str], share_cue1: float) -> list[int]:
    """Cue 1 or 2 per record id: cue 1 where the id's SHA-256 read as a number in [0, 1) is below
    ``share_cue1``; the same id always draws the same cue, whatever else the prompts hold."""
    if not 0.0 <= share_cue1 <= 1.0:
        raise DataError(f"share_cue1={share_cue1}: the share of texts labelled by cue 1 must be in [0, 1]")
    draws = (int(hashlib.sha256(f"cue-share|{r}".encode()).hexdigest()[:13], 16) / 16**13 for r in record_ids)
    return [1 if u < share_cue1 else 2 for u in draws]


def relabel_mixed(prompts: pd.DataFrame, share_cue1: float) -> pd.DataFrame:
    """The prompts labelled by cue 1 on a ``share_cue1`` share of the texts (``hashed_cues``) and by cue 2 on
    the rest: a model whose labels do not say which cue to read."""
    return relabel_by_cues(prompts, hashed_cues(prompts["record_id"], share_cue1))


def keep_agreeing(prompts: pd.DataFrame) -> pd.DataFrame:
    """The training and dev texts whose two cues name the same label, and every test record: whichever cue a
    model trained on them reads is its own choice. The label is both cues'; the prescribed masses (which
    also say whether the cue resolves the question) are a cue's drawn per text by ``hashed_cues`` at 1/2,
    so neither cue's resolved flag is taught more than the other's. DataError when the training or dev split
    holds no such text (a model needs both)."""
    agree = [int(a[0]) == int(a[1]) for a in prompts["cue_answers"]]
    kept = prompts[(prompts["split"] == "test").to_numpy() | np.array(agree, dtype=bool)]
    for split, families in (("train", "first"), ("dev", "second")):
        if not (kept["split"] == split).any():
            raise DataError(
                f"no {split} text of the two-cue data has both cues naming one label, and model C trains on "
                f"those alone: raise data.families' {families} number (its {split} families)"
            )
    return relabel_mixed(kept, 0.5)
