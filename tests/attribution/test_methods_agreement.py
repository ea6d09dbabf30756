"""How far two attribution methods agree on one explained answer (``evaluation/method_agreement.py``):
Spearman's rho of token magnitudes and the overlap of the top 5 over the eligible positions, checked against
an independent computation, on identical rankings (rho 1, overlap 5) and on rankings that must disagree;
and zero-masking with each method's ranking equals zero-masking with that ranking alone."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from xurs_pipeline.credal import credal_width
from xurs_pipeline.evaluation.mask_eval import mask_run
from xurs_pipeline.evaluation.masking import MaskingSpec
from xurs_pipeline.evaluation.method_agreement import (
    TOP,
    agreement_frame,
    method_costs,
    pair_agreement,
    summarise_agreement,
)


def _by_hand(a: np.ndarray, b: np.ndarray, eligible: np.ndarray) -> tuple[float, int]:
    """Pearson's r of the positions' ranks (no ties: argsort of argsort) and the top-5 overlap by a sort."""
    where = np.flatnonzero(eligible)
    ra, rb = (np.argsort(np.argsort(m[where])).astype(float) for m in (a, b))
    da, db = ra - ra.mean(), rb - rb.mean()
    rho = float((da * db).sum() / math.sqrt((da**2).sum() * (db**2).sum()))
    tops = [set(sorted(where, key=lambda i, m=m: -m[i])[:TOP]) for m in (a, b)]
    return rho, len(tops[0] & tops[1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agreement_equals_an_independent_computation_over_eligible_positions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.random(40), rng.random(40)
    eligible = rng.random(40) < 0.7
    rho, overlap = pair_agreement(a, b, eligible, "q")
    expected_rho, expected_overlap = _by_hand(a, b, eligible)
    assert rho == pytest.approx(expected_rho, abs=1e-12)
    assert overlap == expected_overlap
    b_outside = b.copy()
    b_outside[~eligible] = 100.0  # scores at positions no masking reads change nothing
    assert pair_agreement(a, b_outside, eligible, "q") == (rho, overlap)


def test_identical_rankings_agree_fully_and_a_permuted_one_does_not() -> None:
    a = np.arange(20, dtype=float)
    eligible = np.ones(20, dtype=bool)
    assert pair_agreement(a, a, eligible, "q") == (pytest.approx(1.0), TOP)
    assert pair_agreement(a, 3 * a + 1, eligible, "q") == (pytest.approx(1.0), TOP)  # ranks, not values
    reversed_ = pair_agreement(a, a[::-1].copy(), eligible, "q")
    assert reversed_ == (pytest.approx(-1.0), 0)
    permuted = np.random.default_rng(5).permutation(a)
    rho, overlap = pair_agreement(a, permuted, eligible, "q")
    assert rho < 0.9
    assert overlap < TOP
    assert (rho, overlap) == (
        pytest.approx(_by_hand(a, permuted, eligible)[0]),
        _by_hand(a, permuted, eligible)[1],
    )


def test_a_constant_ranking_has_no_rho_and_the_summary_says_how_many_are_defined() -> None:
    eligible = np.ones(8, dtype=bool)
    rho, overlap = pair_agreement(np.arange(8.0), np.zeros(8), eligible, "q")
    assert math.isnan(rho)
    assert overlap == 5 - 3  # the constant one's top 5 are positions 0..4 (ties: earlier first); 7..3 vs 0..4
    frame = pd.DataFrame(
        [
            ("q1", 0, "eg", "grad_l2", float("nan"), 2),
            ("q2", 0, "eg", "grad_l2", 0.5, 4),
            ("q3", 1, "eg", "grad_l2", 0.7, 5),
        ],
        columns=["record_id", "target", "method_a", "method_b", "spearman", "top_overlap"],
    )
    assert summarise_agreement(frame) == {
        "eg vs grad_l2": {
            "answers": 3,
            "spearman_median": pytest.approx(0.6),
            "spearman_defined": 2,
            "top_overlap_median": 4.0,
        }
    }


def _rows(method: str, magnitudes: dict[tuple[str, int], list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "record_id": r,
                "target": t,
                "method": method,
                "token_magnitude": m,
                "forward_evals": 7,
                "grad_evals": 3,
            }
            for (r, t), m in magnitudes.items()
        ]
    )


def test_the_frame_pairs_every_method_in_order_on_the_answers_all_of_them_explained() -> None:
    rng = np.random.default_rng(3)
    prompts = pd.DataFrame({"record_id": ["q1", "q2"], "eligible": [[True] * 9, [True, False] * 4 + [True]]})
    mags = {
        m: {(r, 0): rng.random(9).tolist() for r in ("q1", "q2")}
        for m in ("eg", "occlusion_token", "grad_l2")
    }
    del mags["grad_l2"][("q2", 0)]  # grad_l2 failed on q2: that answer is compared by no pair
    runs = {m: _rows(m, v) for m, v in mags.items()}
    frame = agreement_frame(runs, prompts)
    assert list(zip(frame.method_a, frame.method_b, strict=True)) == [
        ("eg", "occlusion_token"),
        ("eg", "grad_l2"),
        ("occlusion_token", "grad_l2"),
    ]
    assert set(frame.record_id) == {"q1"}
    for row in frame.itertuples(index=False):
        a, b = (np.asarray(mags[m][("q1", 0)]) for m in (row.method_a, row.method_b))
        assert (row.spearman, row.top_overlap) == (
            pytest.approx(_by_hand(a, b, np.ones(9, bool))[0]),
            _by_hand(a, b, np.ones(9, bool))[1],
        )
    assert method_costs(runs["eg"], 2.5) == {
        "questions": 2,
        "forwards_median": 7.0,
        "grad_evals_median": 3.0,
        "seconds_per_question": 2.5,
    }


class _Linear(torch.nn.Module):
    """Masses of a linear head on the mean embedding (b, L, d) -> (b, 15): widths move with each token."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.head = torch.nn.Linear(4, 15).double()

    def forward(self, embeds, attention_mask=None, position_ids=None, **_):  # type: ignore[no-untyped-def]
        return torch.softmax(self.head(embeds.mean(dim=1)), dim=-1)


def test_masking_with_each_methods_ranking_equals_masking_with_that_ranking_alone() -> None:
    """``mask_run(..., by="method")`` scores every method's ranking on the width, with the same random
    controls: each method's D values equal a run of its ranking alone as the width target."""
    model = _Linear()
    torch.manual_seed(1)
    table = torch.randn(30, 4, dtype=torch.float64)
    ids = [1, 5, 7, 2, 9, 11, 3, 4]
    prompts = pd.DataFrame({"record_id": ["q"], "input_ids": [ids], "eligible": [[True] * 8]})
    rng = np.random.default_rng(0)
    rows = pd.concat([_rows(m, {("q", 2): rng.random(8).tolist()}) for m in ("eg", "occlusion_token")])
    spec = MaskingSpec(n_random=6, k_max=3, seed=4, batch_size=4, reuse_prefix=False)

    def masses(embeds, *_):  # type: ignore[no-untyped-def]
        return model(embeds)

    def embed(x: torch.Tensor) -> torch.Tensor:
        return table[x]

    device = torch.device("cpu")
    both = mask_run(masses, embed, prompts, rows, spec, device, by="method")
    assert [e.target for e in both] == ["eg", "occlusion_token"]
    for effect, (_, row) in zip(both, rows.iterrows(), strict=True):
        single = pd.DataFrame([row]).assign(target_fn="width")
        (alone,) = mask_run(masses, embed, prompts, single, spec, device)
        np.testing.assert_allclose(effect.top_delta, alone.top_delta, rtol=1e-12)  # float64, other batches
        np.testing.assert_allclose(effect.random_delta, alone.random_delta, rtol=1e-12)
        x = table[torch.tensor(ids)][None]
        top = int(np.argmax(row.token_magnitude))
        zeroed = x.clone()
        zeroed[0, top] = 0.0
        with torch.no_grad():
            width = [float(credal_width(model(e))[0, 2]) for e in (x, zeroed)]
        assert effect.top_delta[0] == pytest.approx(abs(width[0] - width[1]), rel=1e-12)  # Eq. 8 by hand


def test_occlusions_ranking_has_the_largest_single_token_masking_effect_by_construction() -> None:
    """With ``replacement=zero`` occlusion's magnitude is Eq. 8's D per token, so Table 1 with its ranking
    masks the token of largest D among the eligible ones (why its advantage is no evidence for it), while a
    ranking that puts another token first masks a smaller D."""
    from xurs_pipeline.attribution.config import AttributionConfig
    from xurs_pipeline.attribution.methods import method_for
    from xurs_pipeline.attribution.methods.base import Problem

    model = _Linear()
    torch.manual_seed(2)
    table = torch.randn(30, 4, dtype=torch.float64)
    ids = [1, 5, 7, 2, 9, 11, 3, 4]
    eligible = [True, False, True, True, True, False, True, True]
    x = table[torch.tensor(ids)][None]

    def masses(embeds, *_):  # type: ignore[no-untyped-def]
        return model(embeds)

    problem = Problem(masses=masses, embeds=x, target=2, reuse_prefix=False)
    occlusion = method_for(AttributionConfig(method="occlusion_token")).attribute(problem).magnitude
    prompts = pd.DataFrame({"record_id": ["q"], "input_ids": [ids], "eligible": [eligible]})
    other = np.roll(occlusion, 1)
    rows = pd.concat(
        [
            _rows("occlusion_token", {("q", 2): occlusion.tolist()}),
            _rows("grad_l2", {("q", 2): other.tolist()}),
        ]
    )
    spec = MaskingSpec(n_random=4, k_max=1, seed=0, batch_size=8, reuse_prefix=False)
    cpu = torch.device("cpu")
    first, second = mask_run(masses, lambda t: table[t], prompts, rows, spec, cpu, by="method")
    with torch.no_grad():
        base = float(credal_width(model(x))[0, 2])
        d = []
        for i in range(len(ids)):
            zeroed = x.clone()
            zeroed[0, i] = 0.0
            d.append(abs(base - float(credal_width(model(zeroed))[0, 2])) if eligible[i] else -1.0)
    assert first.top_delta[0] == pytest.approx(max(d), rel=1e-12)
    assert int(first.top_positions[0]) == int(np.argmax(d))
    if int(second.top_positions[0]) != int(np.argmax(d)):
        assert second.top_delta[0] < first.top_delta[0]
