"""Controlled-model gates (App. D.3): the model must pass these before its attributions are interpreted.

Each gate is a :class:`~xurs_pipeline.evaluation.verdicts.Check` with its threshold and verdict, computed
separately for familiar and unseen wording templates, averaging within condition families first.
The pairings (with/without result, irrelevant-detail change, option rearrangement) are given as index
arrays, so this module does not depend on how the data package names its variants.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xurs_pipeline.evaluation import gate_metrics as gm
from xurs_pipeline.evaluation.config import GateThresholds
from xurs_pipeline.evaluation.verdicts import Check, Direction

_NO_PAIRS = np.zeros((0, 2), dtype=np.int64)


@dataclass(frozen=True)
class ControlledPredictions:
    """Predictions on controlled data (n rows) and how rows pair up.

    pred, target (n, 15); answer (n,) correct option; has_result, template_unseen (n,) bool; family (n,)
    str; perms (n, 4) canonical answer shown at each displayed option. result_pairs (p, 2) rows (with
    result, without result); irrelevant_pairs (q, 2) rows (base, detail changed); arrangement_pairs
    (r, 2) rows (canonical arrangement, rearranged), each pair on the same template group.
    """

    pred: np.ndarray
    target: np.ndarray
    answer: np.ndarray
    has_result: np.ndarray
    template_unseen: np.ndarray
    family: np.ndarray
    perms: np.ndarray
    result_pairs: np.ndarray = field(default_factory=lambda: _NO_PAIRS)
    irrelevant_pairs: np.ndarray = field(default_factory=lambda: _NO_PAIRS)
    arrangement_pairs: np.ndarray = field(default_factory=lambda: _NO_PAIRS)

    def __post_init__(self) -> None:
        n = len(self.pred)
        for name in ("target", "answer", "has_result", "template_unseen", "family", "perms"):
            if len(getattr(self, name)) != n:
                raise ValueError(
                    f"controlled predictions: {name} has {len(getattr(self, name))} rows, pred {n}"
                )
        for name in ("result_pairs", "irrelevant_pairs", "arrangement_pairs"):
            pairs = np.asarray(getattr(self, name))
            if pairs.size and (pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.min() < 0 or pairs.max() >= n):
                raise ValueError(f"controlled predictions: {name} must be (k, 2) row indices in [0, {n})")


def _gate(group: str, name: str, value: float, n: int, threshold: float, direction: Direction) -> Check:
    return Check(group, name, value, threshold, direction, n)


def _pairs_in(pairs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The (k, 2) pairs whose first row is in ``rows`` (a boolean (n,) template-group selector)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return pairs[rows[pairs[:, 0]]]


def _result_gates(
    data: ControlledPredictions, pairs: np.ndarray, th: GateThresholds, group: str
) -> list[Check]:
    """Adding the result narrows the selected answer's width: ``pairs`` are (with, without) rows."""
    if not pairs.size:
        return []
    with_, without = pairs[:, 0], pairs[:, 1]
    c = gm.selected(data.pred[with_])  # the answer selected on the prompt with the result
    w = gm.widths(data.pred)
    drops = gm.family_mean((w[with_, c] < w[without, c]).astype(float), data.family[with_])
    return [_gate(group, "width_drop_share", drops, len(pairs), th.width_drop_share_min, ">=")]


def _irrelevant_gates(
    data: ControlledPredictions, pairs: np.ndarray, th: GateThresholds, group: str
) -> list[Check]:
    """Changing an irrelevant detail moves neither masses nor widths: ``pairs`` are (base, changed) rows."""
    if not pairs.size:
        return []
    a, b = data.pred[pairs[:, 0]], data.pred[pairs[:, 1]]
    fam = data.family[pairs[:, 0]]
    mass = gm.family_mean(gm.mass_error(a, b), fam)
    width = gm.family_mean(np.abs(gm.widths(a) - gm.widths(b)).mean(axis=1), fam)
    return [
        _gate(group, "irrelevant_mass_change", mass, len(pairs), th.irrelevant_mass_change_max, "<="),
        _gate(group, "irrelevant_width_change", width, len(pairs), th.irrelevant_width_change_max, "<="),
    ]


def _arrangement_gates(
    data: ControlledPredictions, pairs: np.ndarray, th: GateThresholds, group: str
) -> list[Check]:
    """Rearranging the options moves no canonical mass: ``pairs`` are (canonical, rearranged) rows."""
    if not pairs.size:
        return []
    canon = gm.map_to_canonical(data.pred, data.perms)
    change = gm.mass_error(canon[pairs[:, 0]], canon[pairs[:, 1]])
    mean = gm.family_mean(change, data.family[pairs[:, 0]])
    return [
        _gate(group, "rearrangement_mass_change", mean, len(pairs), th.rearrangement_mass_change_max, "<=")
    ]


def _pair_gates(data: ControlledPredictions, rows: np.ndarray, th: GateThresholds, group: str) -> list[Check]:
    """Gates over pairs whose first row is in ``rows`` (a boolean (n,) template-group selector)."""
    return [
        *_result_gates(data, _pairs_in(data.result_pairs, rows), th, group),
        *_irrelevant_gates(data, _pairs_in(data.irrelevant_pairs, rows), th, group),
        *_arrangement_gates(data, _pairs_in(data.arrangement_pairs, rows), th, group),
    ]


def _template_gates(
    data: ControlledPredictions, rows: np.ndarray, th: GateThresholds, group: str
) -> list[Check]:
    """The row gates (mass and width error, accuracy with the result) of one template group's ``rows``."""
    err = gm.mass_error(data.pred, data.target)
    correct = (gm.selected(data.pred) == np.asarray(data.answer)).astype(float)
    has = np.asarray(data.has_result, dtype=bool)
    fam = data.family
    checks = []
    for name, sel in (("mass_error_with_result", rows & has), ("mass_error_without_result", rows & ~has)):
        if sel.any():
            mean = gm.family_mean(err[sel], fam[sel])
            checks.append(_gate(group, name, mean, int(sel.sum()), th.mass_error_max, "<="))
    width = gm.family_mean(gm.width_error(data.pred, data.target)[rows], fam[rows])
    checks.append(_gate(group, "width_error", width, int(rows.sum()), th.width_error_max, "<="))
    sel = rows & has
    if sel.any():
        accuracy = gm.family_mean(correct[sel], fam[sel])
        checks.append(_gate(group, "accuracy_with_result", accuracy, int(sel.sum()), th.accuracy_min, ">="))
    return checks


def gate_checks(data: ControlledPredictions, th: GateThresholds, prefix: str = "gates") -> list[Check]:
    """All App. D.3 gates for the familiar and the unseen template groups (groups with no rows skipped);
    check groups are ``prefix``, ``prefix_familiar`` and ``prefix_unseen``.

    Validity is checked over every prediction; the behavioural gates use only valid rows' values as
    given (an invalid prediction already fails the validity gate).
    """
    valid = gm.is_valid(data.pred, th.validity_tolerance)
    share = float(valid.mean()) if valid.size else float("nan")
    checks = [_gate(prefix, "valid_share", share, len(valid), 1.0, ">=")]
    unseen = np.asarray(data.template_unseen, dtype=bool)
    for label, rows in (("familiar", ~unseen), ("unseen", unseen)):
        if rows.any():
            checks += _template_gates(data, rows, th, f"{prefix}_{label}")
            checks += _pair_gates(data, rows, th, f"{prefix}_{label}")
    return checks
