"""Model C (``roles.py``: trained on the texts whose two cues name the same label, so its labels name no
cue) is where the label-only rankers fail both ways. Through the study's own ledger (``faithfulness.scored``
with ``baseline_readings``): the training rule ranks no cue first on C and is wrong wherever C depends on a
cue, every decided C probe departs, towards the cue C reads, and a reading that follows behaviour passes
where one that always names cue 1 (the constant's reading) fails. The gate on learning reads A and B only."""

from __future__ import annotations

import pandas as pd
from swap_ledgers import CLEAR_MARGIN, judged

from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.faithfulness import baseline_readings, models_learned, scored
from xurs_pipeline.evaluation.swap.readings import COLUMNS, CueReading
from xurs_pipeline.evaluation.swap.roles import CUE_ROLES, ROLES, TRAINING_CUE

PROBES = 40  # per model; C reads cue 1 on even probes and cue 2 on odd ones, A and B their own cue


def depends(role: str, i: int) -> int:
    return TRAINING_CUE[role] or 1 + i % 2


def c_ledger() -> pd.DataFrame:
    """One study: readings of ``follows`` (the cue the model depends on) and ``always_1`` with the label
    rankers' rows, against the text edits' dependence, every probe clear; order 1 on the first half."""
    ids = [f"p{i}" for i in range(PROBES)]
    rows = []
    for role in ROLES:
        for i, rid in enumerate(ids):
            cue = depends(role, i)
            rows.append(CueReading((0.0, 0.0), (float(cue == 1), float(cue == 2))).row("follows", role, rid))
            rows.append(CueReading((0.0, 0.0), (1.0, 0.0)).row("always_1", role, rid))
    readings = pd.concat(
        [pd.DataFrame(rows, columns=list(COLUMNS)), baseline_readings(ids, list(ROLES))], ignore_index=True
    )
    dependence = pd.DataFrame(
        [
            {
                "yardstick": plan.JUDGE,
                "role": role,
                "record_id": rid,
                "depends_on": depends(role, i),
                "margin": 1.0,
                "share_1": float(depends(role, i) == 1),
            }
            for role in ROLES
            for i, rid in enumerate(ids)
        ]
    )
    order = {rid: 1 + (i >= PROBES // 2) for i, rid in enumerate(ids)}
    return scored(readings, dependence, order, CLEAR_MARGIN)


def test_the_training_rule_names_no_cue_for_model_c_and_every_decided_c_probe_departs() -> None:
    rows = c_ledger()
    rule = rows[(rows["method"] == "training_rule") & (rows["role"] == "C")]
    assert (rule["top"] == 0).all()
    assert not rule["agrees"].astype(bool).any()
    c = rows[(rows["method"] == "follows") & (rows["role"] == "C")]
    assert c["departs"].all()
    assert not rows[(rows["method"] == "follows") & rows["role"].isin(CUE_ROLES)]["departs"].any()
    result = judged(rows)
    assert result["power"] == {
        "studies": 1,
        "clear": 3 * PROBES,
        "departures": PROBES,
        "towards_cue_1": PROBES // 2,
        "towards_cue_2": PROBES // 2,
    }


def test_following_behaviour_beats_both_label_rankers_on_c_and_always_cue_1_does_not() -> None:
    result = judged(c_ledger())
    follows, always_1 = result["methods"]["follows"], result["methods"]["always_1"]
    wrong = follows[plan.JUDGE]["label_rankers_wrong"]
    assert wrong["training_rule"] == {"k": PROBES, "n": PROBES}  # every C probe
    on_cue_2 = PROBES + PROBES // 2  # B's probes, and C's on cue 2
    assert wrong["constant"] == {"k": on_cue_2, "n": on_cue_2}
    c_cells = {n: c for n, c in follows[plan.JUDGE]["cells"].items() if n.startswith("C_order")}
    assert len(c_cells) == 2
    assert all(c["meets_marks"] for c in c_cells.values())
    assert not always_1[plan.JUDGE]["cells"]["C_order1"]["meets_marks"]  # half of C's probes are on cue 2
    assert always_1[plan.JUDGE]["label_rankers_wrong"]["constant"]["k"] == 0


def test_the_learning_gate_reads_the_models_whose_labels_name_a_cue() -> None:
    """Model C's accuracy (where the cues agree) is reported, never the gate: A and B decide it."""
    learned = {"A": {"accuracy_own_cue": 0.95}, "B": {"accuracy_own_cue": 0.92}}
    assert models_learned({**learned, "C": {"accuracy_own_cue": 0.5}})
    assert not models_learned({**learned, "B": {"accuracy_own_cue": 0.85}, "C": {"accuracy_own_cue": 1.0}})
