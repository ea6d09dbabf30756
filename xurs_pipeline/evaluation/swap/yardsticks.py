"""Yardsticks of what a swap model depends on, each its own intervention on the probe's text (issue 53,
docs/swap-control.md): a method is scored against each separately, so that no single kind of edit (the one
closest to some method's own) decides the verdict.

Per probe and cue ``k`` a yardstick edits the text and reads the label's width ``W_P`` (Eq. 2) under the
model, as ``behaviour.py`` does; the effect of cue ``k`` is the mean ``|W(edit) - W(probe)|`` over its edits,
and the model *depends on* the cue with the larger effect (``behaviour.cue_dependence``'s rule: share,
margin, 0 on a tie). The yardsticks:

- ``text_edits``: ``behaviour.py``'s two edits (cue ``k`` names only the label; only its other condition);
- ``sentence_removed``: cue ``k``'s sentence deleted;
- ``unseen_names``: cue ``k``'s named conditions replaced by names no option and no training text holds;
- ``test_renamed``: cue ``k``'s test named by a test no training text names (the blood test becomes the
  saliva test), its conditions kept.

Each edit yardstick is validated on hand-set models before it may judge a method
(``planted_texts.validated``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.evaluation.swap.behaviour import WidthReader, cue_dependence, edited_records

YARDSTICKS = ("text_edits", "sentence_removed", "unseen_names", "test_renamed")
TESTS = ("blood", "urine")  # cue 1's and cue 2's test (data/synthetic/swap.py's CUE_TEMPLATES)
UNSEEN_TEST = "saliva"
UNSEEN_NAMES = ("Quazzle fever", "Vexmor blight")  # invented, unlike the generator's syllable names
_SENTENCE = r" ?The {test} test is positive for (?P<named>[^.]+)\."


def cue_match(question: str, k: int) -> re.Match[str]:
    """Cue ``k``'s (0 or 1) sentence in ``question`` (its ``named`` group: the conditions), or ValueError."""
    found = re.search(_SENTENCE.format(test=TESTS[k]), question)
    if found is None:
        raise ValueError(f"question states no {TESTS[k]} test (cue {k + 1}): not a two-cue probe")
    return found


def _edited(probe: QuestionRecord, text: str, edit: str) -> QuestionRecord:
    """``probe`` with ``text`` as its question; the edit's spans are not tracked (only its width is read)."""
    return replace(probe, record_id=f"{probe.record_id}|{edit}", question=text, synthetic=None)


def removed(probe: QuestionRecord, k: int) -> list[QuestionRecord]:
    match = cue_match(probe.question, k)
    text = probe.question[: match.start()] + probe.question[match.end() :]
    return [_edited(probe, text, f"removed_{k + 1}")]


def unseen(probe: QuestionRecord, k: int) -> list[QuestionRecord]:
    match = cue_match(probe.question, k)
    if set(UNSEEN_NAMES) & set(probe.options):
        raise ValueError(f"{probe.record_id}: an option is named like the unseen names {UNSEEN_NAMES}")
    start, end = match.span("named")
    text = probe.question[:start] + " or ".join(UNSEEN_NAMES) + probe.question[end:]
    return [_edited(probe, text, f"unseen_{k + 1}")]


def renamed_test(probe: QuestionRecord, k: int) -> list[QuestionRecord]:
    match = cue_match(probe.question, k)
    sentence = match.group(0).replace(f"The {TESTS[k]} test", f"The {UNSEEN_TEST} test")
    text = probe.question[: match.start()] + sentence + probe.question[match.end() :]
    return [_edited(probe, text, f"renamed_{k + 1}")]


def text_edits(probe: QuestionRecord, k: int) -> list[QuestionRecord]:
    """``behaviour.py``'s resolve_k and other_k."""
    return edited_records(probe)[1 + 2 * k : 3 + 2 * k]


EDITS: dict[str, Callable[[QuestionRecord, int], list[QuestionRecord]]] = {
    "text_edits": text_edits,
    "sentence_removed": removed,
    "unseen_names": unseen,
    "test_renamed": renamed_test,
}


def yardstick_widths(probes: Sequence[QuestionRecord], widths: WidthReader, yardstick: str) -> pd.DataFrame:
    """One row per probe: ``probe`` (the unedited width), each edit's width (named by its edit, e.g.
    ``resolve_1``) and per cue ``k`` the mean ``|W(edit) - W(probe)|`` of its edits as ``effect_k``;
    ``widths`` maps records to the label's width under one model, (n,)."""
    make = EDITS[yardstick]
    plan = [(p, [make(p, 0), make(p, 1)]) for p in probes]
    records = [r for p, cues in plan for r in (p, *cues[0], *cues[1])]
    values = np.asarray(widths(records), dtype=np.float64)
    rows, at = [], 0
    for p, cues in plan:
        base, at = values[at], at + 1
        row = {"record_id": p.record_id, "probe": base}
        effects = {}  # after every edit's width: the behaviour's columns in EDITS order, then the effects
        for k, edits in enumerate(cues):
            edited = values[at : at + len(edits)]
            row.update({e.record_id.rsplit("|", 1)[1]: w for e, w in zip(edits, edited, strict=True)})
            effects[f"effect_{k + 1}"] = float(np.mean(np.abs(edited - base)))
            at += len(edits)
        rows.append({**row, **effects})
    return pd.DataFrame(rows)


def model_dependence(
    probes: Sequence[QuestionRecord], widths: WidthReader, role: str, text_edits: pd.DataFrame
) -> pd.DataFrame:
    """Every yardstick's dependence of one model (``role``) on the probes, one row per (yardstick, probe);
    ``text_edits``: the role's rows of ``behaviour.cue_dependence`` on the ``text_edits`` widths (read
    once, by the behaviour)."""
    frames = [text_edits.assign(yardstick="text_edits")]
    frames += [
        cue_dependence(yardstick_widths(probes, widths, y), role).assign(yardstick=y) for y in YARDSTICKS[1:]
    ]
    columns = [
        "yardstick",
        "role",
        "record_id",
        "effect_1",
        "effect_2",
        "share_1",
        "depends_on",
        "margin",
    ]
    return pd.concat([f[columns] for f in frames], ignore_index=True)
