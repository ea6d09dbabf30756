"""Controlled-model gates (App. D.3): hand-computed metrics, a passing set, and one bad set per gate."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from eval_cases import masses_from

from xurs_pipeline.evaluation import gate_metrics as gm
from xurs_pipeline.evaluation.config import GateThresholds
from xurs_pipeline.evaluation.gates import ControlledPredictions, gate_checks

WITH = masses_from({(0,): 0.9, (0, 1): 0.1})  # result supplied: A, W_A = 0.1
WITHOUT = masses_from({(0,): 0.4, (1,): 0.4, (0, 1): 0.2})  # A or B, W_A = 0.2
SHIFT = (1, 2, 3, 0)  # displayed option p shows canonical answer SHIFT[p]
IDENTITY = (0, 1, 2, 3)


def displayed(canonical: list[float], perm: tuple[int, ...]) -> list[float]:
    """Masses over displayed options of a prompt whose option p shows canonical answer perm[p]."""
    inverse = {canon: p for p, canon in enumerate(perm)}
    sets = {}
    for subset, value in zip(gm.credal.FOCAL_SETS, canonical, strict=True):
        if value:
            sets[tuple(sorted(inverse[c] for c in subset))] = value
    return masses_from(sets)


def controlled_set() -> ControlledPredictions:
    """Per (family, template group): with, without, irrelevant-detail copy of with, rearranged with."""
    rows: list[tuple] = []  # (target, answer, has_result, unseen, family, perm)
    for family in ("f1", "f2"):
        for unseen in (False, True):
            rows += [
                (WITH, 0, True, unseen, family, IDENTITY),
                (WITHOUT, 0, False, unseen, family, IDENTITY),
                (WITH, 0, True, unseen, family, IDENTITY),
                (displayed(WITH, SHIFT), SHIFT.index(0), True, unseen, family, SHIFT),
            ]
    target = np.array([r[0] for r in rows])
    base = np.arange(0, len(rows), 4)
    return ControlledPredictions(
        pred=target.copy(),
        target=target,
        answer=np.array([r[1] for r in rows]),
        has_result=np.array([r[2] for r in rows]),
        template_unseen=np.array([r[3] for r in rows]),
        family=np.array([r[4] for r in rows]),
        perms=np.array([r[5] for r in rows]),
        result_pairs=np.stack([base, base + 1], 1),
        irrelevant_pairs=np.stack([base, base + 2], 1),
        arrangement_pairs=np.stack([base, base + 3], 1),
    )


def verdicts(data: ControlledPredictions) -> dict[tuple[str, str], bool]:
    return {(c.group, c.name): c.passed for c in gate_checks(data, GateThresholds())}


def test_metrics_hand_computed():
    assert gm.mass_error(np.array([WITH]), np.array([WITHOUT]))[0] == pytest.approx(0.5 + 0.4 + 0.1)
    # widths: WITH (0.1, 0.1, 0, 0), WITHOUT (0.2, 0.2, 0, 0) -> mean |diff| = 0.05
    assert gm.width_error(np.array([WITH]), np.array([WITHOUT]))[0] == pytest.approx(0.05)
    assert gm.selected(np.array([WITH, WITHOUT])).tolist() == [0, 0]  # tie A/B -> first
    assert gm.family_mean(np.array([1.0, 1.0, 1.0, 0.0]), np.array(["a", "a", "a", "b"])) == 0.5
    shown = np.array([masses_from({(0,): 1.0})])
    back = gm.map_to_canonical(shown, np.array([SHIFT]))
    assert back[0].tolist() == masses_from({(1,): 1.0})  # displayed A shows canonical B
    np.testing.assert_allclose(
        gm.map_to_canonical(np.array([displayed(WITH, SHIFT)]), np.array([SHIFT]))[0], WITH
    )
    assert gm.is_valid(np.array([WITH, [*WITH[:14], WITH[14] + 1e-5]]), 1e-6).tolist() == [True, False]
    with pytest.raises(ValueError, match="permutations"):
        gm.map_to_canonical(shown, np.array([[0, 0, 1, 2]]))


def test_perfect_predictions_pass_every_gate_in_both_template_groups():
    result = verdicts(controlled_set())
    assert all(result.values()), result
    names = {name for group, name in result if group == "gates_unseen"}
    assert names == {
        "mass_error_with_result",
        "mass_error_without_result",
        "width_error",
        "accuracy_with_result",
        "width_drop_share",
        "irrelevant_mass_change",
        "irrelevant_width_change",
        "rearrangement_mass_change",
    }
    assert result[("gates", "valid_share")]


def _break(rows: slice | list[int], value: list[float]) -> ControlledPredictions:
    data = controlled_set()
    pred = data.pred.copy()
    pred[rows] = value
    return dataclasses.replace(data, pred=pred)


FAMILIAR_WITH = [0, 2, 3, 8, 10, 11]
FAMILIAR_WITHOUT = [1, 9]


@pytest.mark.parametrize(
    ("data", "failing"),
    [
        (
            _break(FAMILIAR_WITH[:2] + FAMILIAR_WITH[3:5], masses_from({(0,): 0.75, (0, 1, 2, 3): 0.25})),
            "mass_error_with_result",
        ),
        (
            _break(FAMILIAR_WITHOUT, masses_from({(0,): 0.3, (1,): 0.3, (0, 1): 0.4})),
            "mass_error_without_result",
        ),
        (_break(FAMILIAR_WITHOUT, masses_from({(0,): 0.5, (1,): 0.5})), "width_drop_share"),
        (_break([0, 2, 8, 10], masses_from({(1,): 0.9, (0, 1): 0.1})), "accuracy_with_result"),
        (_break([2, 10], masses_from({(0,): 0.8, (0, 1): 0.2})), "irrelevant_mass_change"),
        (_break([3, 11], WITH), "rearrangement_mass_change"),
    ],
)
def test_each_gate_fails_on_a_deliberately_bad_prediction_set(data, failing):
    result = verdicts(data)
    assert result[("gates_familiar", failing)] is False
    assert all(v for (group, _), v in result.items() if group == "gates_unseen")  # untouched group passes


def test_width_error_and_irrelevant_width_gates_fail_alone():
    # 0.024 of mass moves from {A} to Θ: E_m = 0.048 (<= 0.05) but every width rises by 0.024 (> 0.02)
    small = masses_from({(0,): 0.876, (0, 1): 0.1, (0, 1, 2, 3): 0.024})
    result = verdicts(_break([2, 10], small))
    assert result[("gates_familiar", "irrelevant_mass_change")] is True
    assert result[("gates_familiar", "irrelevant_width_change")] is False
    wide = masses_from({(0,): 0.6, (0, 1): 0.2, (0, 2): 0.2})  # every familiar row: width error 0.25
    data = controlled_set()
    pred = data.pred.copy()
    pred[:4] = wide
    pred[8:12] = wide
    assert verdicts(dataclasses.replace(data, pred=pred))[("gates_familiar", "width_error")] is False


def test_validity_gate_fails_on_one_negative_mass():
    bad = list(WITH)
    bad[0], bad[14] = 1.0, -0.1
    result = verdicts(_break([5], bad))
    assert result[("gates", "valid_share")] is False


def test_misaligned_inputs_raise():
    data = controlled_set()
    with pytest.raises(ValueError, match="family has 3 rows"):
        dataclasses.replace(data, family=data.family[:3])
    with pytest.raises(ValueError, match="result_pairs"):
        dataclasses.replace(data, result_pairs=np.array([[0, 99]]))
