"""Zero-masking (Eq. 8) and the top-k curve on an analytic model where every D is known in closed form."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from eval_cases import LinearWidthModel, linear_question_embeds
from torch import nn

from xurs_pipeline.attribution.masked import classifier_mass_fn, masked_masses
from xurs_pipeline.evaluation.mask_eval import BootstrapSpec, effects_frame, summarise
from xurs_pipeline.evaluation.masking import (
    InsufficientEligibleError,
    MaskingQuestion,
    MaskingSpec,
    question_rng,
    top_eligible,
    zero_masking_effects,
)

SEQ = 12
VALUES = np.linspace(0.5, 1.6, SEQ)
WEIGHTS = np.array([0.01, 0.08, 0.02, 0.0, 0.05, 0.01, 0.04, 0.03, 0.02, 0.01, 0.06, 0.02])
ELIGIBLE = np.array([False, True, True, True, True, True, True, True, True, True, False, False])


def question(record_id: str = "q1", eligible: np.ndarray = ELIGIBLE) -> MaskingQuestion:
    return MaskingQuestion(
        record_id=record_id,
        embeds=linear_question_embeds(VALUES),
        attention_mask=torch.ones(SEQ, dtype=torch.long),
        position_ids=torch.arange(SEQ),
        eligible=eligible,
        c=0,
    )


def test_deltas_match_closed_form_and_top_is_best_eligible():
    model = LinearWidthModel(WEIGHTS)
    contrib = WEIGHTS * VALUES  # D_i = w_i v_i exactly
    ranking = contrib.copy()  # rank by the true effect; position 10 is larger but ineligible
    spec = MaskingSpec(n_random=20, k_max=4, seed=3, batch_size=7)
    (eff,) = zero_masking_effects(model, question(), {"width": ranking}, spec)
    eligible_idx = np.flatnonzero(ELIGIBLE)
    best = eligible_idx[np.argsort(-contrib[eligible_idx], kind="stable")]
    assert eff.top_positions.tolist() == best[:4].tolist()
    assert eff.top_positions[0] == 1  # i*: highest eligible, although position 10 has a larger score
    assert eff.f_x == pytest.approx(float(contrib.sum()))
    for k in range(1, 5):
        assert eff.top_delta[k - 1] == pytest.approx(contrib[best[:k]].sum(), abs=1e-12)
        for b in range(20):
            assert eff.random_delta[b, k - 1] == pytest.approx(
                contrib[eff.random_positions[b, :k]].sum(), abs=1e-12
            )
    expected_a = contrib[best[0]] - contrib[eff.random_positions[:, 0]].mean()  # Eq. 8
    assert eff.advantage[0] == pytest.approx(expected_a, abs=1e-12)
    assert np.isin(eff.random_positions, eligible_idx).all()


def test_mask_positions_and_length_are_unchanged_and_only_the_row_is_zeroed():
    model = LinearWidthModel(WEIGHTS)
    q = question()
    masses = masked_masses(model, q, [[], [2], [4, 7]], batch_size=2)
    assert masses.shape == (3, 15)
    embeds = torch.cat([call[0] for call in model.calls])
    assert embeds.shape == (3, SEQ, 3)
    for call in model.calls:
        assert torch.equal(call[1], torch.ones_like(call[1]))
        assert torch.equal(call[2], torch.arange(SEQ).expand_as(call[2]))
    assert torch.equal(embeds[0], q.embeds)
    assert torch.all(embeds[1, 2] == 0)
    assert torch.equal(embeds[1, :2], q.embeds[:2])
    assert torch.all(embeds[2, [4, 7]] == 0)
    assert torch.equal(embeds[2, 5:7], q.embeds[5:7])


def test_random_draws_are_uniform_with_replacement_seeded_and_may_hit_top():
    eligible = np.zeros(SEQ, dtype=bool)
    eligible[[2, 5, 8]] = True
    spec = MaskingSpec(n_random=3000, k_max=1, seed=9)
    (eff,) = zero_masking_effects(
        LinearWidthModel(WEIGHTS), question(eligible=eligible), {"width": WEIGHTS}, spec
    )
    draws = eff.random_positions[:, 0]
    counts = np.array([(draws == p).sum() for p in (2, 5, 8)])
    assert np.all(np.abs(counts - 1000) < 120)  # uniform (±~4.5 sd)
    assert eff.top_positions[0] in draws  # i* can be drawn
    (again,) = zero_masking_effects(
        LinearWidthModel(WEIGHTS), question(eligible=eligible), {"width": WEIGHTS}, spec
    )
    assert np.array_equal(again.random_positions, eff.random_positions)
    other = question_rng(9, "q2").choice(10, size=50)
    assert not np.array_equal(other, question_rng(9, "q1").choice(10, size=50))


def test_k_sets_are_distinct_and_nested():
    spec = MaskingSpec(n_random=50, k_max=5, seed=1)
    (eff,) = zero_masking_effects(LinearWidthModel(WEIGHTS), question(), {"width": WEIGHTS}, spec)
    assert all(len(set(row)) == 5 for row in eff.random_positions.tolist())
    assert np.all(np.diff(eff.top_delta) >= -1e-12)  # masking more tokens of a monotone model changes more


def test_batch_size_does_not_change_results():
    a = zero_masking_effects(LinearWidthModel(WEIGHTS), question(), {"width": WEIGHTS}, MaskingSpec(k_max=3))
    b = zero_masking_effects(
        LinearWidthModel(WEIGHTS), question(), {"width": WEIGHTS}, MaskingSpec(k_max=3, batch_size=1)
    )
    np.testing.assert_allclose(a[0].random_delta, b[0].random_delta, atol=1e-14)
    np.testing.assert_allclose(a[0].top_delta, b[0].top_delta, atol=1e-14)


def test_several_targets_share_random_sets_but_use_their_own_rankings_and_functions():
    spec = MaskingSpec(n_random=10, k_max=2, seed=4)
    rankings = {"width": WEIGHTS * VALUES, "betp": -WEIGHTS}
    width, betp = zero_masking_effects(LinearWidthModel(WEIGHTS), question(), rankings, spec)
    assert np.array_equal(width.random_positions, betp.random_positions)
    assert betp.top_positions[0] == 3  # weight 0: the lowest weight ranks first under -WEIGHTS
    # BetP(A) = 1 - s + s/4, so |change| = 3/4 of the width change
    np.testing.assert_allclose(betp.random_delta, 0.75 * width.random_delta, atol=1e-12)


def test_a_question_with_fewer_eligible_tokens_than_top_k_max_stops_its_curve_there():
    """Eq. 8 needs one eligible token; the top-k curve stops at the question's eligible count."""
    few = np.zeros(SEQ, dtype=bool)
    few[[1, 2]] = True
    contrib = WEIGHTS * VALUES
    (eff,) = zero_masking_effects(
        LinearWidthModel(WEIGHTS), question("short", few), {"width": contrib}, MaskingSpec(k_max=10)
    )
    assert eff.top_positions.tolist() == [1, 2]  # contrib[1] > contrib[2]
    assert (eff.top_delta.shape, eff.random_delta.shape) == ((2,), (20, 2))
    np.testing.assert_allclose(eff.top_delta, np.cumsum(contrib[[1, 2]]), atol=1e-12)
    np.testing.assert_allclose(eff.random_delta[:, 1], contrib[[1, 2]].sum(), atol=1e-12)  # both masked
    with pytest.raises(InsufficientEligibleError, match=r"'none'.*no eligible token"):
        zero_masking_effects(
            LinearWidthModel(WEIGHTS),
            question("none", np.zeros(SEQ, dtype=bool)),
            {"width": WEIGHTS},
            MaskingSpec(),
        )


def test_the_curve_averages_at_each_k_over_the_questions_that_reach_it():
    few = np.zeros(SEQ, dtype=bool)
    few[[1, 2]] = True
    contrib = WEIGHTS * VALUES
    spec = MaskingSpec(n_random=5, k_max=3, seed=2)
    effects = [
        *zero_masking_effects(LinearWidthModel(WEIGHTS), question("long"), {"width": contrib}, spec),
        *zero_masking_effects(LinearWidthModel(WEIGHTS), question("short", few), {"width": contrib}, spec),
    ]
    summary = summarise(effects_frame(effects), BootstrapSpec(resamples=200))["width"]
    long, short = effects
    assert summary["curve"]["k2"]["questions"] == 2
    assert summary["curve"]["k2"]["mean"] == pytest.approx((long.advantage[1] + short.advantage[1]) / 2)
    assert summary["curve"]["k3"]["questions"] == 1
    assert summary["curve"]["k3"]["mean"] == pytest.approx(long.advantage[2])
    with pytest.raises(ValueError, match="shape"):
        top_eligible(np.ones(5), ELIGIBLE, 1, "q")
    with pytest.raises(ValueError, match="NaN"):
        top_eligible(np.full(SEQ, np.nan), ELIGIBLE, 1, "q")
    with pytest.raises(KeyError, match="valid"):
        zero_masking_effects(LinearWidthModel(WEIGHTS), question(), {"widht": WEIGHTS}, MaskingSpec(k_max=1))


class _TinyClassifier(nn.Module):
    """A one-layer self-attention classifier honouring the attention mask (keys masked out)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = nn.Linear(8, 15)

    def forward(self, inputs_embeds, attention_mask, position_ids):
        out, _ = self.attn(inputs_embeds, inputs_embeds, inputs_embeds, key_padding_mask=attention_mask == 0)
        masses = torch.softmax(self.head(out[:, -1]), dim=-1)
        return type("Out", (), {"masses": masses})()


def test_masking_a_padded_position_changes_nothing_through_a_real_module():
    model = _TinyClassifier().eval()
    embeds = torch.randn(6, 8)
    mask = torch.tensor([0, 0, 1, 1, 1, 1])  # left padding
    q = MaskingQuestion("p", embeds, mask, torch.tensor([0, 0, 0, 1, 2, 3]), np.ones(6, bool), 0)
    masses = masked_masses(classifier_mass_fn(model), q, [[], [0], [3]], batch_size=3)
    torch.testing.assert_close(masses[0], masses[1])  # a masked-out key: zeroing it is invisible
    assert not torch.allclose(masses[0], masses[2])
