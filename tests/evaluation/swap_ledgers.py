"""Synthetic swap ledgers shared by the faithfulness tests: seeds x probes x models, with departures from the
training rule towards each cue, where every count and verdict is known. No model runs."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pandas as pd

from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.faithfulness import faithfulness, scored, with_degraded
from xurs_pipeline.evaluation.swap.pooled import pooled_rows
from xurs_pipeline.evaluation.swap.readings import COLUMNS, CueReading
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS

SEEDS, PROBES = 6, 24  # 6 seeds x 24 probes x 2 models = 288 clear pairs
DEPARTS = {"A": range(0, 6), "B": range(6, 12)}  # probes where each model depends on the other cue
CLEAR_MARGIN = 0.2


def own(role: str) -> int:
    """The cue the role's labels followed (the tests state it, rather than read ``roles.ROLES``)."""
    return 1 if role == "A" else 2


def behaviour(study: int, role: str, i: int) -> int:
    """The cue the model depends on: its own, except on ``DEPARTS`` (A towards cue 2, B towards cue 1)."""
    return 3 - own(role) if i in DEPARTS[role] else own(role)


READERS: dict[str, Callable[[int, str, int, int], int]] = {
    "follows": lambda s, role, i, dep: dep,  # reads the model
    "rule": lambda s, role, i, dep: own(role),  # reads the labels
    "always_1": lambda s, role, i, dep: 1,
    "training_rule": lambda s, role, i, dep: own(role),  # the baselines, as faithfulness.scored makes them
    "constant": lambda s, role, i, dep: 1,
}


def ledger(
    readers=READERS, seeds: int = SEEDS, clear=lambda s, role, i: True, dep=behaviour, probes: int = PROBES
) -> pd.DataFrame:
    """The ledger's rows for the text edits: every method x seed x model x probe; order 2 on odd probes."""
    rows = []
    for (name, top), s, role, i in itertools.product(readers.items(), range(seeds), "AB", range(probes)):
        depends = dep(s, role, i)
        t = top(s, role, i, depends)
        rows.append(
            {
                "method": name,
                "yardstick": plan.JUDGE,
                "role": role,
                "record_id": f"s{s}/p{i}",
                "top": t,
                "depends_on": depends,
                "margin": 1.0 if clear(s, role, i) else CLEAR_MARGIN / 2,
                "agrees": float(t == depends),
                "clear": clear(s, role, i),
                "departs": depends != own(role),
                "order": 1 + i % 2,
                "study": f"s{s}",
            }
        )
    return pd.DataFrame(rows)


def through_scored(hand: pd.DataFrame, degrade: bool = False) -> pd.DataFrame:
    """The hand ledger rebuilt the way a study builds it: each seed's readings (the top cue as its summed
    magnitude; with ``degrade``, with their degraded copies, ``faithfulness.with_degraded``) and the judge's
    dependence through ``faithfulness.scored``, the seeds through ``pooled.pooled_rows``."""
    studies = {}
    for label, part in hand.groupby("study", sort=False):
        probe = part["record_id"].str.split("/").str[1]
        readings = pd.DataFrame(
            [
                CueReading((0.0, 0.0), (float(t == 1), float(t == 2))).row(m, role, rid)
                for m, role, rid, t in zip(part["method"], part["role"], probe, part["top"], strict=True)
            ],
            columns=list(COLUMNS),
        )
        dependence = part.assign(record_id=probe, share_1=(part["depends_on"] == 1).astype(float))
        dependence = dependence.drop_duplicates(["role", "record_id"])
        order = dict(zip(probe, part["order"], strict=True))
        studies[label] = scored(
            with_degraded(readings) if degrade else readings, dependence, order, CLEAR_MARGIN
        )
    return pooled_rows(studies)


def judging(judges: bool = True) -> dict:
    """Only the text edits judge (or, with ``judges`` False, none)."""
    judge = {"planted": judges, "models_learned": True, "as_trained": 1.0, "known_ranking": {}}
    judge["ranks_degraded"] = True  # vacuous: nothing ranked
    return {y: {**judge, "judges": judges and y == plan.JUDGE} for y in YARDSTICKS}


NO_PLANTED = pd.DataFrame(columns=["method", "mechanism", "recovered"])


def judged(rows: pd.DataFrame, judges: bool = True) -> dict:
    return faithfulness(rows, judging(judges), NO_PLANTED, 0.95)
