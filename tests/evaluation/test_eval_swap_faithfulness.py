"""The swap study's faithfulness (evaluation/swap/faithfulness.py) end to end on planted models whose
dependence is known: the values it reports are asserted, not only their ranges. Model A reads cue 1 as
trained; model B, trained on cue 2, reads cue 1 too (its behaviour departs from its training rule on every
probe), so a method that reads the model and the training-rule ranker part exactly there."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.swap.behaviour import cue_dependence, edit_widths
from xurs_pipeline.evaluation.swap.faithfulness import (
    BASELINES,
    FaithfulnessInputs,
    cell_passes,
    faithfulness_metrics,
    scored,
    study_faithfulness,
)
from xurs_pipeline.evaluation.swap.planted_texts import PLANTED
from xurs_pipeline.evaluation.swap.pooled import pooled_faithfulness
from xurs_pipeline.evaluation.swap.readings import COLUMNS, CueReading

N = 40  # probes, 20 in each cue order


@pytest.fixture(scope="module")
def probes():
    records = generate_swap((4, 2, N), 4, seed=11, order="counterbalanced")
    return [r for r in records if r.synthetic.variant == "probe"]


def readings(probes, tops: dict[str, dict[str, int]]) -> pd.DataFrame:
    """method -> role -> the cue it ranks first on every probe."""
    rows = []
    for method, by_role in tops.items():
        for role, top in by_role.items():
            best = (1.0, 0.0) if top == 1 else (0.0, 1.0)
            rows += [CueReading(best, best, 3).row(method, role, p.record_id) for p in probes]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def run(probes, readers, tops, learned: float = 1.0):
    behaviour = pd.concat([cue_dependence(edit_widths(probes, r), role) for role, r in readers.items()])
    cues = {p.record_id: ([p.synthetic.cue_spans[0][0]], [p.synthetic.cue_spans[1][0]]) for p in probes}
    accuracy = {role: {"accuracy_own_cue": learned} for role in readers}
    inputs = FaithfulnessInputs(probes, readers, behaviour, readings(probes, tops), cues, accuracy)
    return study_faithfulness(inputs, clear_margin=0.2, confidence=0.95, seed=0, resamples=500)


@pytest.fixture(scope="module")
def departing(probes):
    readers = {"A": PLANTED[0].widths, "B": PLANTED[0].widths}  # both read cue 1
    return run(probes, readers, {"reads_model": {"A": 1, "B": 1}, "always_2": {"A": 2, "B": 2}})


def test_every_method_and_baseline_is_scored_on_every_yardstick_model_and_order(departing) -> None:
    rows, result = departing
    assert set(rows["method"]) == {"reads_model", "always_2", *BASELINES}
    assert rows.groupby(["method", "yardstick"]).size().eq(2 * N).all()
    assert rows.drop_duplicates("record_id")["order"].value_counts().to_dict() == {1: N // 2, 2: N // 2}
    cells = result["methods"]["reads_model"]["text_edits"]["cells"]
    assert {"all", "A", "B", "order1", "order2", "A_order1", "A_order2", "B_order1", "B_order2"} == set(cells)
    assert (cells["A_order2"]["agreement_k"], cells["A_order2"]["agreement_n"]) == (N // 2, N // 2)


def test_a_method_that_reads_the_model_beats_the_training_rule_where_behaviour_departs(departing) -> None:
    _, result = departing
    edits = {m: result["methods"][m]["text_edits"] for m in ("reads_model", "training_rule", "always_2")}
    assert edits["reads_model"]["departs"] == {"k": N, "n": N, "p": pytest.approx(0.5**N)}
    assert edits["training_rule"]["departs"]["k"] == 0
    assert edits["training_rule"]["departs"]["p"] == pytest.approx(1.0)
    assert edits["reads_model"]["cells"]["all"]["agreement"] == 1.0
    assert edits["training_rule"]["cells"]["all"]["agreement"] == 0.5  # right on A, wrong on B
    assert edits["training_rule"]["cells"]["B"]["agreement"] == 0.0
    paired = edits["training_rule"]["paired"]
    assert edits["reads_model"]["paired"] == {"best": True}
    assert (paired["against"], paired["only_best"], paired["only_this"]) == ("reads_model", N, 0)
    assert paired["mcnemar_p"] == pytest.approx(2 * 0.5**N)
    # Holm over always_2 (2N discordant: smallest p, x3), this (x2) and constant (agrees everywhere: p 1)
    assert paired["mcnemar_p_holm"] == pytest.approx(2 * 2 * 0.5**N)
    assert edits["always_2"]["paired"]["mcnemar_p_holm"] == pytest.approx(3 * 2 * 0.5 ** (2 * N))
    assert result["methods"]["constant"]["text_edits"]["paired"]["mcnemar_p_holm"] == 1.0
    assert paired["difference"] == pytest.approx(0.5)


def test_trustworthy_needs_every_model_and_order_cell_of_every_validated_yardstick(departing) -> None:
    _, result = departing
    validity = result["yardsticks"]
    assert not validity["sentence_removed"]["planted"]  # fails the planted saturation and cancellation
    assert validity["text_edits"]["planted"]
    # models that learned their cues (accuracy 1.0) yet a yardstick naming cue 1 for model B on every probe:
    # it contradicts the models' own-cue accuracy on half the probes, so it does not judge (0.5 < 0.75)
    assert validity["text_edits"]["rule_agreement"] == 0.5
    assert not validity["text_edits"]["validated"]
    assert validity["training_rule"]["validated"]
    cells = result["methods"]["training_rule"]["training_rule"]["cells"]
    assert all(c["passes"] for name, c in cells.items() if "_order" in name)  # it passes its own yardstick
    trusted = {m: v["trustworthy"] for m, v in result["methods"].items()}
    # ... but reads no model: the planted models cannot run it, so nothing here is called trustworthy
    assert trusted == dict.fromkeys(("reads_model", "always_2", "training_rule", "constant"), False)


def test_a_method_reading_models_that_behave_as_trained_is_trustworthy(probes) -> None:
    readers = {"A": PLANTED[0].widths, "B": PLANTED[1].widths}
    # readings named after token methods, so the planted mechanisms run those methods
    as_trained, cue_1 = {"A": 1, "B": 2}, {"A": 1, "B": 1}
    tops = {"layer_ig": as_trained, "occlusion_token": as_trained, "grad_x_input": cue_1}
    _, result = run(probes, readers, tops)
    methods = result["methods"]
    assert methods["layer_ig"]["validated_yardsticks"] == ["text_edits", "training_rule"]
    assert methods["layer_ig"]["trustworthy"]
    assert methods["occlusion_token"]["planted"] == {"linear": True, "saturated": False, "cancelling": True,
                                                     "interaction": True}  # fmt: skip
    assert not methods["occlusion_token"]["trustworthy"]  # every cell passes, the saturation does not
    assert all(c["passes"] for c in methods["occlusion_token"]["text_edits"]["cells"].values())
    assert not methods["grad_x_input"]["trustworthy"]  # fails model B's cells
    assert not methods["training_rule"]["trustworthy"]
    _, unlearned = run(probes, readers, {"layer_ig": {"A": 1, "B": 2}}, learned=0.5)
    assert not unlearned["methods"]["layer_ig"]["trustworthy"]  # no yardstick is validated
    metrics = faithfulness_metrics(result)
    wilson_low = pytest.approx(0.8389, abs=1e-4)  # 20 of 20
    assert metrics["layer_ig"]["text_edits"]["B_order2"] == {"agreement": 1.0, "agreement_low": wilson_low,
                                                             "n": N // 2}  # fmt: skip
    assert math.isnan(metrics["layer_ig"]["text_edits"]["departs_p"])


def test_a_cell_passes_on_the_agreement_marks() -> None:
    assert cell_passes(20, 20)  # Wilson low 0.839
    assert not cell_passes(5, 5)  # 1.0 but Wilson low 0.57
    assert not cell_passes(0, 0)
    assert not cell_passes(26, 30)  # 0.87 < 0.9


def test_pooling_studies_adds_their_counts_and_resamples_every_model(probes) -> None:
    readers = {"A": PLANTED[0].widths, "B": PLANTED[1].widths}
    tops = {"layer_ig": {"A": 1, "B": 2}, "grad_x_input": {"A": 1, "B": 1}}
    rows, section = run(probes, readers, tops)
    _, unlearned = run(probes, readers, tops, learned=0.5)
    pooled = pooled_faithfulness({"s1": (rows, section), "s2": (rows, section)}, resamples=300)
    one, both = section["methods"]["layer_ig"], pooled["methods"]["layer_ig"]
    for cell in ("all", "B_order2"):
        for key in ("agreement_k", "agreement_n", "clear_k", "clear_n"):
            assert both["text_edits"]["cells"][cell][key] == 2 * one["text_edits"]["cells"][cell][key]
    assert both["trustworthy"]
    assert pooled["yardsticks"] == section["yardsticks"]
    paired = pooled["methods"]["grad_x_input"]["text_edits"]["paired"]
    assert paired["models"] == 4  # (study, role) pairs, resampled whole
    assert paired["only_best"] == 2 * section["methods"]["grad_x_input"]["text_edits"]["paired"]["only_best"]
    mixed = pooled_faithfulness({"s1": (rows, section), "s2": (rows, unlearned)}, resamples=100)
    assert not mixed["yardsticks"]["text_edits"]["validated"]  # one study's models did not learn
    assert not mixed["methods"]["layer_ig"]["trustworthy"]


def test_a_reading_without_a_yardsticks_dependence_is_refused(probes) -> None:
    measured = readings(probes[:2], {"layer_ig": {"A": 1}})
    dependence = pd.DataFrame({"yardstick": "text_edits", "role": "A", "record_id": [probes[0].record_id],
                               "depends_on": 1, "margin": 1.0})  # fmt: skip
    with pytest.raises(ValueError, match="without every yardstick's dependence"):
        scored(measured, dependence, {p.record_id: 1 for p in probes}, 0.2)
    full = pd.concat([dependence, dependence.assign(record_id=probes[1].record_id)])
    assert len(scored(measured, full, {p.record_id: 1 for p in probes}, 0.2)) == 2
