"""The training loss (App. B.1) equals a hand computation; the 15-set loss (App. D.4) too."""

from __future__ import annotations

import math

import pytest
import torch

from xurs_pipeline.credal import beliefs_to_masses, masses_from_set_logits
from xurs_pipeline.models.heads import ClassifierOutput
from xurs_pipeline.models.losses import membership_targets, rs_loss

# Beliefs in FOCAL_SETS[:14] order: A B C D | AB AC AD BC BD CD | ABC ABD ACD BCD.
# Row 0 (answer A): conversion gives m~_AB = 0.7 - 0.4 - 0.2 = 0.1, all other pairs/triples 0;
#   s = 0.9 < 1, so r = 0.1 goes to Θ. Masses A .4 B .2 C .1 D .1 AB .1 Θ .1; BetP(A) = .4 + .1/2 + .1/4.
# Row 1 (answer C): m~_AB = 0.5 - 1.1 = -0.6 (negative), m~_CD = 0.6 - 0.4 = 0.2, triples negative;
#   s = 0.6 + 0.5 + 0.3 + 0.1 + 0.2 = 1.7 > 1: rescaled. BetP(C) = (0.3 + 0.2 / 2) / 1.7.
BELIEFS = [
    [0.4, 0.2, 0.1, 0.1, 0.7, 0.5, 0.5, 0.3, 0.3, 0.2, 0.8, 0.8, 0.6, 0.4],
    [0.6, 0.5, 0.3, 0.1, 0.5, 0.9, 0.7, 0.8, 0.6, 0.6, 0.9, 0.9, 0.9, 0.95],
]
LABELS = [0, 2]
HAND_MASSES_ROW0 = [0.4, 0.2, 0.1, 0.1, 0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.1]
HAND_MASSES_ROW1 = [x / 1.7 for x in (0.6, 0.5, 0.3, 0.1, 0, 0, 0, 0, 0, 0.2, 0, 0, 0, 0, 0)]
ln = math.log


def _hand_loss() -> float:
    nll0 = -ln(0.4 + 0.1 / 2 + 0.1 / 4)
    # t_S = 1 for the sets containing A: A, AB, AC, AD, ABC, ABD, ACD.
    bce0 = (
        -(
            ln(0.4)
            + ln(1 - 0.2)
            + ln(1 - 0.1)
            + ln(1 - 0.1)
            + ln(0.7)
            + ln(0.5)
            + ln(0.5)
            + ln(1 - 0.3)
            + ln(1 - 0.3)
            + ln(1 - 0.2)
            + ln(0.8)
            + ln(0.8)
            + ln(0.6)
            + ln(1 - 0.4)
        )
        / 14
    )
    nll1 = -ln((0.3 + 0.2 / 2) / 1.7)
    # t_S = 1 for the sets containing C: C, AC, BC, CD, ABC, ACD, BCD.
    bce1 = (
        -(
            ln(1 - 0.6)
            + ln(1 - 0.5)
            + ln(0.3)
            + ln(1 - 0.1)
            + ln(1 - 0.5)
            + ln(0.9)
            + ln(1 - 0.7)
            + ln(0.8)
            + ln(1 - 0.6)
            + ln(0.6)
            + ln(0.9)
            + ln(1 - 0.9)
            + ln(0.9)
            + ln(0.95)
        )
        / 14
    )
    return ((nll0 + 0.1 * bce0) + (nll1 + 0.1 * bce1)) / 2


def test_belief_loss_equals_hand_computation() -> None:
    b = torch.tensor(BELIEFS, dtype=torch.float64)
    raw = torch.log(b) - torch.log1p(-b)  # logit: sigmoid(raw) = b
    masses = beliefs_to_masses(torch.sigmoid(raw))
    torch.testing.assert_close(
        masses, torch.tensor([HAND_MASSES_ROW0, HAND_MASSES_ROW1], dtype=torch.float64)
    )
    parts = rs_loss(ClassifierOutput(raw, masses), torch.tensor(LABELS), "belief14", set_weight=0.1)
    assert parts.total.item() == pytest.approx(_hand_loss(), abs=1e-6)
    assert parts.answer_nll[1].item() == pytest.approx(-ln(0.4 / 1.7), abs=1e-9)


def test_belief_loss_gradient_flows_through_the_correction() -> None:
    raw = torch.zeros(1, 14, dtype=torch.float64, requires_grad=True)
    parts = rs_loss(
        ClassifierOutput(raw, beliefs_to_masses(torch.sigmoid(raw))), torch.tensor([1]), "belief14"
    )
    parts.total.backward()
    # All beliefs 0.5: singletons sum to 2 > 1, so masses rescale; BetP(B) depends on b_B.
    assert raw.grad is not None
    assert raw.grad[0, 1] < 0


def test_membership_targets_follow_focal_sets() -> None:
    t = membership_targets(torch.tensor([3]))
    # D, AD, BD, CD, ABD, ACD, BCD contain option 3.
    assert t[0].tolist() == [0, 0, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1]


def test_mass15_loss_is_cross_entropy_against_targets() -> None:
    logits = torch.zeros(1, 15, dtype=torch.float64)
    target = torch.zeros(1, 15, dtype=torch.float64)
    target[0, 0], target[0, 4] = 0.5, 0.5  # half on {A}, half on {A, B}
    parts = rs_loss(
        ClassifierOutput(logits, masses_from_set_logits(logits)),
        torch.tensor([0]),
        "mass15",
        target_masses=target,
    )
    assert parts.total.item() == pytest.approx(ln(15), abs=1e-9)  # uniform masses 1/15
    assert parts.answer_nll.item() == pytest.approx(-ln(0.25), abs=1e-9)  # BetP uniform by symmetry


def test_mass15_without_targets_and_bad_labels_fail_clearly() -> None:
    logits = torch.zeros(2, 15)
    out = ClassifierOutput(logits, masses_from_set_logits(logits))
    with pytest.raises(ValueError, match="target_masses"):
        rs_loss(out, torch.tensor([0, 1]), "mass15")
    with pytest.raises(ValueError, match=r"option indices 0\.\.3"):
        rs_loss(out, torch.tensor([0, 4]), "mass15", target_masses=torch.full((2, 15), 1 / 15))
