"""What each swap model actually does: how the explained width depends on each cue, by interventions on
the probe's text that stay in the data's distribution.

A probe (``data/synthetic/swap.py``) states two unresolved cues that share its label ``P``: cue 1 names
"P or Q", cue 2 "P or R". Per probe and cue ``k`` two edits of the text, each a sentence the training data
holds (a resolved cue names one condition):

- ``resolve_k``: cue ``k`` names only the label ``P`` (it resolves the question);
- ``other_k``: cue ``k`` names only its other condition (``Q`` or ``R``: it resolves to another answer).

Each edited question is prepared as the ``prepare`` stage prepares it (same instruction, template and
tokenizer) and the label's width ``W_P`` (Eq. 2) read under the model. The behavioural effect of cue ``k``
is the mean absolute width change of its two edits,
``e_k = (|W(resolve_k) - W(probe)| + |W(other_k) - W(probe)|) / 2`` (``yardsticks.yardstick_widths``, the
``text_edits`` yardstick); the model *depends on* the cue with the larger effect (0 on a tie), its share
``e_1 / (e_1 + e_2)`` and the margin ``|e_1 - e_2| / (e_1 + e_2)`` (0 = both cues move the width alike, 1 =
only one does) say by how much (:func:`cue_dependence`, every yardstick's rule). A model *behaves as
trained* on a probe when it depends on the cue its labels followed (A: cue 1, B: cue 2): read off the
ledger (``agreement.behaves_as_trained``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.attribution.targets import width_target
from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.swap import read_swap
from xurs_pipeline.train.predict import prompt_masses

EDITS = ("probe", "resolve_1", "other_1", "resolve_2", "other_2")


def edited_records(probe: QuestionRecord) -> list[QuestionRecord]:
    """The probe and its four edits (``EDITS`` order), ids ``<probe id>|<edit>``; the other fields (cue spans
    moved with the text) are the probe's."""
    label = _probe_label(probe)
    named = read_swap(probe)
    out = [replace(probe, record_id=f"{probe.record_id}|probe")]
    for k in (0, 1):
        other = next(i for i in named[k] if i != label)
        for edit, option in (("resolve", label), ("other", other)):
            out.append(_renamed(probe, k, probe.options[option], f"{edit}_{k + 1}"))
    return out


def both_resolved(probe: QuestionRecord) -> QuestionRecord:
    """The probe with both cues resolved to its label (each names only P), id ``<probe id>|both_resolved``:
    the swap study's counterfactual reference (``attribution/variants.py``)."""
    name = probe.options[_probe_label(probe)]
    record = _renamed(_renamed(probe, 0, name, "resolve_1"), 1, name, "resolve_2")
    return replace(record, record_id=f"{probe.record_id}|both_resolved")


def _probe_label(probe: QuestionRecord) -> int:
    """The label both cues of a swap probe share; ValueError when ``probe`` is no swap probe."""
    info = probe.synthetic
    if info is None or len(info.cue_spans) != 2 or any(info.cue_resolved) or info.has_result:
        raise ValueError(f"{probe.record_id}: not a swap probe (two unresolved cues, no result)")
    return int(info.cue_answers[0])


def _renamed(probe: QuestionRecord, k: int, name: str, edit: str) -> QuestionRecord:
    """``probe`` with cue ``k``'s named conditions replaced by ``name``; spans after it move with the text."""
    info = probe.synthetic
    assert info is not None
    start, end = info.cue_spans[k]
    text = probe.question[:start] + name + probe.question[end:]
    shift = len(name) - (end - start)
    spans = tuple(
        (s, s + len(name)) if j == k else ((s + shift, e + shift) if s >= end else (s, e))
        for j, (s, e) in enumerate(info.cue_spans)
    )
    resolved = tuple(j == k or r for j, r in enumerate(info.cue_resolved))
    info = replace(
        info,
        cue_spans=spans,
        clue_span=spans[0],
        case_span=(0, len(text)),
        cue_resolved=resolved,
        has_result=True,
    )
    return replace(probe, record_id=f"{probe.record_id}|{edit}", question=text, synthetic=info)


WidthReader = Callable[[Sequence[QuestionRecord]], np.ndarray]


def label_widths(classifier: Any, tokenizer: Any, max_tokens: int, batch_size: int) -> WidthReader:
    """Records -> the width of each record's ``answer_idx`` under ``classifier`` (on the device its weights
    are on) (n,), the records prepared as the ``prepare`` stage prepares them."""

    def read(records: Sequence[QuestionRecord]) -> np.ndarray:
        frame = prepare_records(records, tokenizer, max_tokens).frame
        masses = prompt_masses(classifier, frame, tokenizer.pad_token_id, batch_size)
        labels = torch.tensor(frame["answer_idx"].to_numpy(), dtype=torch.long)
        return width_target(masses.double(), labels).numpy()  # W of each record's label (Eq. 2)

    return read


def cue_dependence(effects: pd.DataFrame, role: str) -> pd.DataFrame:
    """Rows with ``effect_1``, ``effect_2`` (any yardstick's, ``yardsticks.yardstick_widths``) -> with
    share_1, depends_on (1, 2; 0 on a tie) and margin (module docstring), ``role`` first."""
    out = effects.copy()
    total = out["effect_1"] + out["effect_2"]
    moved, divisor = total > 0, total.where(total > 0, 1.0)  # a probe neither cue moves: no share, margin 0
    out["share_1"] = np.where(moved, out["effect_1"] / divisor, np.nan)
    out["depends_on"] = np.select(
        [out["effect_1"] > out["effect_2"], out["effect_2"] > out["effect_1"]], [1, 2], 0
    )
    out["margin"] = np.where(moved, (out["effect_1"] - out["effect_2"]).abs() / divisor, 0.0)
    out.insert(0, "role", role)
    return out
