"""A fresh belief head starts where every answer set is alive (no clipped positive part, width > 0)."""

from __future__ import annotations

import pytest
import torch

from xurs_pipeline.credal import FOCAL_SETS, correction_stats, credal_width
from xurs_pipeline.models.heads import RandomSetHead


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_fresh_belief_head_has_positive_width_and_no_negative_intermediates(kind):
    head = RandomSetHead(16, "belief14", kind, hidden_units=8, seed=3)
    features = torch.randn(5, 16, generator=torch.Generator().manual_seed(0)) * 3
    out = head(features)
    stats = correction_stats(torch.sigmoid(out.raw))
    assert (stats.n_negative == 0).all()
    assert torch.allclose(stats.s, torch.full((5,), 14 / 15), atol=0.1)
    assert torch.allclose(credal_width(out.masses), torch.full((5, 4), 7 / 15), atol=0.1)


def test_fresh_belief_head_width_is_one_minus_bel_c_minus_bel_complement_with_live_gradients():
    # No clipping and s < 1, so W_c = Pl({c}) - Bel({c}) = 1 - Bel(not c) - Bel({c}) (Eq. 1, 6): the
    # gradient reaches exactly the head outputs of {c} and of its complement (a clipped start gives none).
    head = RandomSetHead(16, "belief14", "linear", seed=0)
    out = head(torch.randn(4, 16, generator=torch.Generator().manual_seed(1)))
    beliefs = torch.sigmoid(out.raw)
    complement = FOCAL_SETS.index((1, 2, 3))
    assert torch.allclose(credal_width(out.masses)[:, 0], 1 - beliefs[:, 0] - beliefs[:, complement])
    credal_width(out.masses)[:, 0].sum().backward()
    live = head.net.bias.grad.abs() > 0
    assert live.nonzero().flatten().tolist() == [0, complement]
    assert (head.net.weight.grad[[0, complement]].abs() > 0).all()


def test_fresh_mass_head_is_uniform_over_sets():
    head = RandomSetHead(16, "mass15", "linear", seed=0)
    out = head(torch.randn(3, 16, generator=torch.Generator().manual_seed(2)))
    assert torch.allclose(out.masses, torch.full((3, 15), 1 / 15), atol=0.01)
