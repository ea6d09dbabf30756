"""Attribution explains the configured target function (issue 17 item 6): width (the paper's), predictive
entropy or the explained answer's BetP, each checked against credal's own functions."""

from __future__ import annotations

import pytest
import torch

from xurs_pipeline import credal
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.model import Objective, widths_and_betp


def _masses(seed: int = 0) -> torch.Tensor:
    return torch.softmax(torch.randn(3, 15, generator=torch.Generator().manual_seed(seed)), -1).double()


@pytest.mark.parametrize("fn", ["width", "entropy", "betp"])
def test_the_objective_differentiates_the_chosen_target(fn: str):
    m = _masses()
    p = credal.pignistic(m)
    expected = {
        "width": credal.credal_width(m),
        "betp": p,
        "entropy": (-(p * p.log()).sum(-1, keepdim=True)).expand(-1, 4),
    }[fn]
    objective = Objective.build((2, 0), "direct", fn)
    torch.testing.assert_close(objective(m), expected[:, [2, 0]])
    values, betp = widths_and_betp(m, fn)
    torch.testing.assert_close(values, expected.float())
    torch.testing.assert_close(betp, p.float())


def test_only_the_width_has_an_answer_set_route():
    with pytest.raises(ValueError, match=r"answer_set.*width only"):
        Objective.build((1,), "answer_set", "entropy")
    with pytest.raises(ValueError, match=r"attribution\.route='answer_set'.*target_fn='betp'"):
        AttributionConfig(route="answer_set", target_fn="betp")
    with pytest.raises(ValueError, match="target_fn"):
        AttributionConfig(target_fn="margin")
