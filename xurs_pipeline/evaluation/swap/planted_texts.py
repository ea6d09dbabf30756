"""Hand-set text models whose dependence on each cue is known exactly: an edit yardstick (``yardsticks.py``)
may judge methods only if it recovers that dependence on every probe of every model that reads what a cue
*names* (``kind`` ``content``: the question the study asks). The suite also holds a model that reads only
whether a cue is *stated* (``presence``), which the text edits cannot see by construction (they keep the
sentence): it shows that the validation is a test a yardstick can fail, and what each yardstick measures.

A planted model reads each cue's sentence by its test (``yardsticks.TESTS``) and its state: ``label`` (it
names only the probe's label), ``pair`` (the label and another option), ``other`` (only another option),
``absent`` (no sentence for that test: removed, or its test renamed) or ``unknown`` (it names no option).
Its width is ``W = 0.5 + v_1[s_1] + v_2[s_2] + w x_1 x_2`` with ``x = -1, 0, +1`` for ``label``, any other
state, ``other``; ``truth`` is the cue it depends on by construction. What a ``content`` model makes of a
cue it cannot read (``absent``, ``unknown``) is fixed by nothing, so a yardstick recovers it only if it
recovers every member of its family (:func:`variants`: each cue's value there from its lowest stated value
to its highest). The suite:

- ``cue_1``, ``cue_2``: one cue read, every state its own width; the other ignored;
- ``saturated``: cue 1 read only where it names another condition (the width is flat from the probe towards
  the label), cue 2 weakly everywhere: truth cue 1;
- ``cancelling``: each name in cue 1 moves the width, the label's down and the other's up by as much, so the
  probe's pair reads like a cue naming nothing; cue 2 weakly: truth cue 1;
- ``interaction``: cue 1 read, cue 2 only through its product with cue 1 (invisible from the probe): truth
  cue 1;
- ``presence`` (kind ``presence``): cue 1 moves the width only when its sentence is absent (removed or its
  test renamed), whatever it names (its mechanism: no family); cue 2 weakly: truth cue 1, misread by the
  text edits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.evaluation.swap.behaviour import cue_dependence
from xurs_pipeline.evaluation.swap.roles import FIRST_ROLE
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS, cue_match, yardstick_widths

STATES = ("label", "pair", "other", "absent", "unknown")
UNREAD_GRID = 3  # points of each cue's absent and unknown value in a content model's family (variants)


@dataclass(frozen=True)
class PlantedText:
    """``values[k]``: cue ``k + 1``'s width contribution per state (``STATES``); ``interaction``: ``w``."""

    name: str
    values: tuple[dict[str, float], dict[str, float]]
    truth: int
    interaction: float = 0.0
    kind: str = "content"

    def widths(self, records: Sequence[QuestionRecord]) -> np.ndarray:
        """The label's width of each record (n,) (module docstring)."""
        out = []
        for r in records:
            states = [cue_state(r, k) for k in (0, 1)]
            x = [{"label": -1.0, "other": 1.0}.get(s, 0.0) for s in states]
            w = 0.5 + sum(self.values[k][s] for k, s in enumerate(states)) + self.interaction * x[0] * x[1]
            out.append(w)
        return np.asarray(out)


def cue_state(record: QuestionRecord, k: int) -> str:
    """The state (``STATES``) of cue ``k`` (0 or 1) in ``record``'s question."""
    try:
        found = cue_match(record.question, k)
    except ValueError:
        return "absent"
    named = [n for n in found.group("named").split(" or ") if n in record.options]
    if not named:
        return "unknown"
    label = record.options[record.answer_idx]
    if named == [label]:
        return "label"
    return "pair" if label in named else "other"


def _reads(label: float, pair: float, other: float, unread: float | None = None) -> dict[str, float]:
    """A cue's value per state: those it cannot read (absent, unknown) at ``unread`` (None: the pair's)."""
    cannot = pair if unread is None else unread
    return {"label": label, "pair": pair, "other": other, "absent": cannot, "unknown": cannot}


QUIET = _reads(0.0, 0.0, 0.0)
WEAK = _reads(-0.1, 0.0, 0.1)
READS = _reads(-0.4, 0.0, 0.4)
PLANTED = (
    PlantedText("cue_1", (READS, QUIET), 1),
    PlantedText("cue_2", (QUIET, READS), 2),
    PlantedText("saturated", (_reads(0.0, 0.0, 0.45), WEAK), 1),
    PlantedText("cancelling", (_reads(-0.3, 0.0, 0.3), WEAK), 1),
    PlantedText("interaction", (READS, QUIET), 1, interaction=0.3),
    PlantedText("presence", ({**QUIET, "absent": 0.4}, WEAK), 1, kind="presence"),
)


def variants(model: PlantedText) -> list[PlantedText]:
    """A ``content`` model's family (``UNREAD_GRID`` values a cue: module docstring); presence: alone."""
    if model.kind != "content":
        return [model]
    stated = [[cue[s] for s in STATES[:3]] for cue in model.values]
    one, two = (np.linspace(min(v), max(v), UNREAD_GRID) for v in stated)
    return [replace(model, values=(_reads(*stated[0], a), _reads(*stated[1], b))) for a in one for b in two]


def recovery(probes: Sequence[QuestionRecord]) -> pd.DataFrame:
    """Per (edit yardstick, planted model): its ``kind``, on how many (family member, probe) pairs
    (:func:`variants`) the yardstick names the planted ``truth`` (k of n), and on all (``recovered``)."""
    rows = []
    for model in PLANTED:
        for yardstick in YARDSTICKS:
            named = [
                cue_dependence(yardstick_widths(probes, m.widths, yardstick), FIRST_ROLE)["depends_on"]
                for m in variants(model)
            ]
            k, n = sum(int((found == model.truth).sum()) for found in named), sum(map(len, named))
            rows.append((yardstick, model.name, model.kind, k, n, k == n))
    return pd.DataFrame(rows, columns=["yardstick", "planted", "kind", "k", "n", "recovered"])


def validated(recovered: pd.DataFrame) -> dict[str, bool]:
    """Edit yardstick -> recovers every planted ``content`` model's dependence on every probe."""
    content = recovered[recovered["kind"] == "content"]
    return {y: bool(content.loc[content["yardstick"] == y, "recovered"].all()) for y in YARDSTICKS}
