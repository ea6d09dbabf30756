"""Block paths (``attribution.path='blocks'``, ``attribution/paths.py``): pieces that run through real token
sequences from the reference to the input, each block's attribution equal to the width step between two
waypoints (recomputed here with plain forward passes), completeness, prefix reuse along the pieces."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from helpers import PAD_ID, TinyBeliefClassifier, prompts_frame

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.endpoints import natural_widths, prompt_of
from xurs_pipeline.attribution.inputs import reference_pool, select_questions
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.paths import block_pieces
from xurs_pipeline.attribution.quadrature import BudgetError
from xurs_pipeline.attribution.question import ReferencePool
from xurs_pipeline.attribution.references import prepare_aligned, prepare_training, prepare_zero
from xurs_pipeline.credal import credal_width
from xurs_pipeline.errors import XursError

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def model() -> TinyBeliefClassifier:
    return TinyBeliefClassifier(vocab=40).requires_grad_(False)


def test_pieces_run_from_the_reference_to_the_input_one_block_at_a_time() -> None:
    x = list(range(3, 23))  # L = 20
    other = [30] * 8 + x[8:16] + [31] * 2  # block [8, 16) already equals X: no piece there
    refs = prepare_training(x, [other, [32] * 25], ["a", "b"], PAD_ID, CPU)
    pieces = block_pieces(refs, x, 8)
    assert pieces.owner.tolist() == [0, 0, 1, 1, 1]
    starts, ends = pieces.refs.prepared_ids, pieces.refs.end_ids
    for r in (0, 1):
        own = np.flatnonzero(pieces.owner == r)
        assert torch.equal(starts[own[0]], refs.prepared_ids[r])  # from B_r ...
        assert torch.equal(ends[own[-1]], torch.tensor(x))  # ... to X
        for a, b in itertools.pairwise(own):
            assert torch.equal(ends[a], starts[b])  # each piece starts where the last one ended
    moved = [sorted(set((starts[j] != ends[j]).nonzero().flatten().tolist())) for j in range(5)]
    assert moved == [
        list(range(8)),
        [16, 17, 18, 19],
        list(range(8)),
        list(range(8, 16)),
        [16, 17, 18, 19],
    ]
    assert [list(c) for c in pieces.refs.changed_positions] == moved
    with pytest.raises(ValueError, match="token references"):
        block_pieces(prepare_zero(x), x, 8)


def test_an_aligned_reference_moves_only_the_blocks_it_differs_in() -> None:
    x = list(range(3, 35))  # L = 32
    paired = [*x[:20], 39, *x[22:]]  # a two-token clue replaced by one token at 20-21
    refs = prepare_aligned(x, paired, "pair", PAD_ID, CPU)
    pieces = block_pieces(refs, x, 8)
    assert pieces.owner.tolist() == [0]  # one piece: block [16, 24)
    assert list(pieces.refs.changed_positions[0]) == list(refs.changed_positions[0])


def test_block_paths_need_a_quadrature_estimator_and_token_references() -> None:
    for bad in ({"method": "eg"}, {"method": "kronrod", "reference": "zero", "refs_per_collection": 1}):
        with pytest.raises(ValueError, match=r"attribution\.path='blocks'"):
            AttributionConfig(path="blocks", **bad)
    with pytest.raises(ValueError, match=r"attribution\.path="):
        AttributionConfig(path="curved")
    with pytest.raises(ValueError, match=r"attribution\.path_block=0"):
        AttributionConfig(path_block=0)


def _width(model, prompt, target: int):
    def width(ids: list[int]) -> float:
        with torch.no_grad():
            out = model(model.embed(torch.tensor([ids])), prompt.attention_mask, prompt.position_ids)
        return float(credal_width(out.masses, validate=False)[0, target])

    return width


def _row(model, frame, **overrides):
    cfg = AttributionConfig(**{"progress": False, "refs_per_collection": 1, "path_block": 4, **overrides})
    pool = ReferencePool(*reference_pool(frame, cfg, 64))
    pool.natural = [natural_widths(model, ids, 4, CPU) for ids in pool.token_ids]
    (q,) = select_questions(frame, cfg, 64)[:1]
    (row,) = attribute_question(model, q, pool, cfg, PAD_ID).rows
    return row, list(q.input_ids), list(pool.token_ids[0][0])


@pytest.mark.parametrize(
    ("estimator", "tolerance"),
    [
        ({"method": "kronrod", "kronrod_tolerance": 1e-4, "kronrod_max_evals": 6000}, 1e-4),
        (
            {
                "method": "ig",
                "ig_adaptive": True,
                "ig_points": 16,
                "ig_tolerance": 1e-2,
                "ig_max_points": 1024,
            },
            1e-2,
        ),
    ],
)
def test_each_block_receives_the_width_step_between_its_waypoints(model, estimator, tolerance) -> None:
    """Σ over block k's positions = F(W_k) - F(W_{k-1}), the waypoints spliced and evaluated here by plain
    forward passes; the whole sum = F(X) - F(B) (Eq. 9). The straight path's block sums do not match them."""
    frame = prompts_frame(n_test=1, n_train=1, lengths=(14, 15)).assign(answer_idx=0)
    estimator = {**estimator, "target": "correct"}  # option 0: width 0.30 at X, 0.02 at B
    row, x, ref = _row(model, frame, path="blocks", **estimator)
    assert row.path == "blocks_4"
    prompt = prompt_of(model, x, CPU)
    width = _width(model, prompt, row.target)
    length = len(x)
    waypoint = (ref + [PAD_ID] * length)[:length]  # B, prepared (Sec. 3.3)
    f_b = width(waypoint)
    signed = np.asarray(row.token_signed)
    steps = []
    for lo in range(0, length, 4):
        following = waypoint[:lo] + x[lo : lo + 4] + waypoint[lo + 4 :]
        steps.append((lo, width(following) - width(waypoint)))
        waypoint = following
    assert waypoint == x
    assert not row.budget_exhausted
    for lo, step in steps:  # each piece's error is within its share of the tolerance (float32 sums)
        assert signed[lo : lo + 4].sum() == pytest.approx(step, abs=tolerance + 2e-6), lo
    assert row.residual == pytest.approx(abs(signed.sum() - (width(x) - f_b)), abs=2e-6)
    assert row.residual <= row.error_bound * (1 + 1e-4) + 1e-7
    assert row.error_bound <= tolerance * (1 + 1e-4)
    assert row.roughness >= 1 - 1e-3  # total variation over all pieces >= the net change
    assert max(abs(step) for _, step in steps) > 0.05  # the width moves along the way
    straight, _, _ = _row(model, frame, path="straight", **estimator)
    gaps = [abs(np.asarray(straight.token_signed)[lo : lo + 4].sum() - step) for lo, step in steps]
    assert max(gaps) > 4 * tolerance  # another path, other block sums: the check above can fail
    assert straight.signed_sum == pytest.approx(row.signed_sum, abs=2 * tolerance)  # one total (Eq. 9)


def test_pieces_reuse_the_prefix_they_share_with_the_input(monkeypatch) -> None:
    """On the tiny Llama (which continues from a key/value cache) later pieces run only from their block on;
    the attributions equal the full-length pieces' to rounding."""
    from test_prefix import LENGTH, _classifier, _ids

    from xurs_pipeline.attribution import gradients

    model = _classifier()
    x, ref = _ids(0), _ids(7)
    frame = pd.DataFrame(
        [
            {
                "record_id": "train-0",
                "split": "train",
                "input_ids": ref,
                "answer_idx": 0,
                "eligible": [True] * LENGTH,
            },
            {
                "record_id": "test-0",
                "split": "test",
                "input_ids": x,
                "answer_idx": 1,
                "eligible": [True] * LENGTH,
            },
        ]
    )
    used: list[int] = []
    original = gradients.shared_prefix

    def spy(*args):
        found = original(*args)
        used.append(found.length if found else 0)
        return found

    monkeypatch.setattr(gradients, "shared_prefix", spy)
    cfg = {"method": "kronrod", "kronrod_tolerance": 1e-3, "kronrod_max_evals": 3000, "path_block": 16}
    fast, _, _ = _row(model, frame, path="blocks", **cfg)
    assert sorted(set(used)) == [0, 16, 32]  # block [0, 16) full length, the others after their prefix
    used.clear()
    full, _, _ = _row(model, frame, path="blocks", reuse_prefix=False, **cfg)
    assert set(used) == set()  # reuse off: never asked
    a, b = torch.tensor(fast.token_signed), torch.tensor(full.token_signed)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    assert fast.grad_evals == full.grad_evals


def test_a_budget_below_the_block_paths_first_pass_names_both_keys(model) -> None:
    frame = prompts_frame(n_test=1, n_train=1, lengths=(14, 15))
    message = r"kronrod_max_evals=30: below the first pass.s 60 evaluations \(4 pieces of the block path"
    message += r".*attribution\.path_block"
    with pytest.raises(BudgetError, match=message):
        _row(model, frame, path="blocks", method="kronrod", kronrod_max_evals=30)
    assert issubclass(BudgetError, XursError)  # the stage prints one line and exits 2
