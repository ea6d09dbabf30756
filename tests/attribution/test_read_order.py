"""kronrod's ``read`` rule (attribution/read_order.py): integrate until the order of the read groups is
certain, on analytic per-token integrands whose exact integrals are known, and its refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.special import expit

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import AttributionInputError, select_questions
from xurs_pipeline.attribution.quadrature import KronrodSpec, gauss_over_kronrod, integrate
from xurs_pipeline.attribution.read_order import ReadGroups, ReadPayload

GROUPS = ReadGroups(((0, 1), (2,)))  # group A: tokens 0 and 1; group B: token 2; token 3 is not read


def _step(centre: float, steepness: float, mass: float):
    """The derivative of mass x sigmoid(steepness (α - centre)), and its integral over [0, 1]."""
    s = lambda a: expit(steepness * (a - centre))  # noqa: E731
    return (lambda a: mass * steepness * s(a) * (1 - s(a))), mass * (s(1.0) - s(0.0))


def _spike(centre: float, width: float, mass: float):
    """A Gaussian bump of ``mass`` (its tails outside [0, 1] negligible)."""
    return lambda a: mass * np.exp(-0.5 * ((a - centre) / width) ** 2) / (width * np.sqrt(2 * np.pi)), mass


def _evaluate(tokens, groups: ReadGroups = GROUPS):
    """An ``Evaluate`` of one reference whose token i's integrand is tokens[i] (d = 1, T = 1): the slope is
    their sum, the payload the K15- and G7-weighted token vectors."""
    ratio = gauss_over_kronrod()

    def evaluate(ref: int, nodes: np.ndarray, weights: np.ndarray):
        h = np.array([[f(a) for f in tokens] for a in nodes])  # (15, L)
        k15 = torch.tensor(weights @ h, dtype=torch.float64).reshape(1, -1, 1)
        g7 = torch.tensor((weights * ratio) @ h, dtype=torch.float64).reshape(1, -1, 1)
        return h.sum(1, keepdims=True), groups.payload(k15, g7)

    return evaluate


def _order(totals: np.ndarray) -> int:
    return int(np.argmax(totals))


def test_read_stops_once_the_order_is_certain_well_before_the_bound_rule():
    """A steep token in group A, a smooth one in B and a steep unread token: the order A > B is clear long
    before every token is integrated to the bound rule's tolerance; the read rule stops there, with the
    exact order, a positive margin and App. B.4's largest residual."""
    (a0, i0), (a3, i3) = _step(0.4, 60.0, 1.0), _step(0.7, 80.0, 0.5)
    tokens = [a0, lambda a: 0.3 * np.cos(a), lambda a: 0.4 * a, a3]
    exact = np.array([i0, 0.3 * np.sin(1.0), 0.2, i3])
    gap = np.array([[exact.sum()]])
    read = integrate(_evaluate(tokens), gap, KronrodSpec(0.01, 4000, stop="read"), read=GROUPS)
    bound = integrate(_evaluate(tokens), gap, KronrodSpec(0.01, 4000, stop="bound"), read=GROUPS)
    assert not read.exhausted
    assert not bound.exhausted
    assert read.evals < bound.evals
    assert read.trace[-1, 4] > 0  # the margin
    assert read.residual.max() <= 0.05
    vector = read.payload[0].vector[0, :, 0].numpy()
    assert _order(GROUPS.group_sums(np.abs(vector)[None])[:, 0]) == _order(
        np.array([exact[0] + exact[1], exact[2]])
    )
    assert np.isnan(bound.trace[:, 4]).all()  # the bound rule computes no margin


def test_a_feature_between_the_nodes_is_caught_by_the_residual_not_taken_as_certain():
    """Group A's token holds a narrow spike that the first pass's nodes miss, so both rules on its interval
    agree near 0 and the coarse order (B first) looks certain. The exact residual (the spike's mass) is far
    above 0.05, so the rule refines on, finds the spike and ends with A first."""
    spike, mass = _spike(0.55, 0.004, 1.0)
    tokens = [spike, lambda a: 0.02 * a, lambda a: 0.3 + 0.0 * a, lambda a: 0.0 * a]
    gap = np.array([[mass + 0.01 + 0.3]])
    report = integrate(_evaluate(tokens), gap, KronrodSpec(0.01, 6000, stop="read"), read=GROUPS)
    first = report.trace[0]
    assert first[4] > 0  # the coarse order (B first) looked certain on the estimates alone
    assert first[3] > 0.5  # but the exact residual said a feature was missed
    assert not report.exhausted
    vector = report.payload[0].vector[0, :, 0].numpy()
    totals = GROUPS.group_sums(np.abs(vector)[None])[:, 0]
    assert _order(totals) == 0
    assert totals[0] == pytest.approx(mass + 0.01, abs=0.02)


def test_a_tie_is_never_certain_and_exhausts_the_budget():
    """Both groups integrate the same polynomial (G7 exact: every error estimate 0): the margin stays 0, never
    positive, so the rule spends the budget and flags it."""
    poly = lambda a: 1 + a - a**3  # noqa: E731
    tokens = [poly, lambda a: 0.0 * a, poly, lambda a: 0.0 * a]
    gap = np.array([[2 * (1 + 0.5 - 0.25)]])
    report = integrate(_evaluate(tokens), gap, KronrodSpec(0.01, 200, stop="read"), read=GROUPS)
    assert report.exhausted
    assert np.all(report.trace[:, 4] <= 0)
    assert report.residual.max() < 1e-12  # the values were exact all along: only the order was in doubt


def test_margin_matches_a_brute_force_computation_for_both_reductions():
    rng = np.random.default_rng(3)
    groups = ((0, 3), (1,), (4, 5))
    for reduction in ("l2", "abs_sum"):
        read = ReadGroups(groups, reduction)
        paths = [ReadPayload(torch.tensor(rng.normal(size=(2, 7, 3))), rng.uniform(0, 0.3, (3, 2)))]
        paths.append(ReadPayload(torch.tensor(rng.normal(size=(2, 7, 3))), rng.uniform(0, 0.3, (3, 2))))
        check = read.check(paths, n_paths=2)
        vector = (paths[0].vector + paths[1].vector).numpy() / 2
        error = (paths[0].error + paths[1].error) / 2
        mag = np.linalg.norm(vector, axis=2) if reduction == "l2" else np.abs(vector.sum(2))  # (T, L)
        expected = np.inf
        for t in range(2):
            score = [mag[t, list(g)].sum() for g in groups]
            top = int(np.argmax(score))
            for g in range(3):
                if g != top:
                    expected = min(expected, score[top] - score[g] - error[top, t] - error[g, t])
        assert check.margin == pytest.approx(expected, abs=1e-12)
        t, top, other = check.pair
        deciding = _score(mag, groups, t, top) - _score(mag, groups, t, other)
        assert check.margin == pytest.approx(deciding - error[top, t] - error[other, t])


def _score(mag: np.ndarray, groups, t: int, g: int) -> float:
    return float(mag[t, list(groups[g])].sum())


def test_refusals_name_what_to_change():
    with pytest.raises(ValueError, match="kronrod_rule='k15'"):
        KronrodSpec(stop="read", rule="trapezoid")
    with pytest.raises(ValueError, match="kronrod_rule='k15'"):
        KronrodSpec(lead_rule="read", rule="trapezoid")
    with pytest.raises(ValueError, match="at least two disjoint"):
        ReadGroups(((0, 1),))
    with pytest.raises(ValueError, match="at least two disjoint"):
        ReadGroups(((0, 1), (1, 2)))
    with pytest.raises(ValueError, match="needs the read groups"):
        integrate(_evaluate([lambda a: a] * 4), np.array([[2.0]]), KronrodSpec(stop="read"))


def _prompts(with_cues: bool) -> pd.DataFrame:
    rows = []
    for i, split in enumerate(["test", "train"]):
        row = {
            "record_id": f"r{i}",
            "split": split,
            "input_ids": [1, 5, 6, 7, 8, 9],
            "eligible": [False, True, True, True, True, True],
            "answer_idx": 0,
        }
        if with_cues:
            row["cue_positions"] = [np.array([1, 2]), np.array([4])]
        rows.append(row)
    return pd.DataFrame(rows)


def test_questions_carry_their_cues_under_the_read_rule_and_a_record_without_is_named():
    cfg = AttributionConfig(method="kronrod", kronrod_stop="read", refs_per_collection=1, progress=False)
    (q,) = select_questions(_prompts(True), cfg, 64)
    assert q.read == ((1, 2), (4,))
    (plain,) = select_questions(_prompts(True), AttributionConfig(method="kronrod", progress=False), 64)
    assert plain.read is None  # no rule reads them
    with pytest.raises(AttributionInputError, match=r"record r0: .*kronrod_stop/kronrod_lead='read'"):
        select_questions(_prompts(False), cfg, 64)


def test_on_a_tiny_model_the_certified_order_is_the_dense_quadratures():
    """On the tiny model's rough paths (two references): group A, the two tokens a dense independent
    quadrature (512 plain-autograd midpoints a path) credits most, against group B, the next two. The read
    rule stops with that order, for fewer evaluations than the bound rule at its tolerance."""
    from dataclasses import replace

    from helpers import TinyBeliefClassifier, dense_midpoint, tiny_path_problem, width_fn

    from xurs_pipeline.attribution.estimators import AdaptiveKronrod

    model = TinyBeliefClassifier(vocab=40).requires_grad_(False)
    problem = tiny_path_problem(model, 2, target=2, samples_per_call=16)
    width = width_fn(model, problem.prompt, 2)
    x = problem.prompt.embeds
    base = [model.embed(problem.refs.prepared_ids[j : j + 1]) for j in range(2)]
    dense = sum(dense_midpoint(width, x, b, 512) for b in base) / 2  # (L, d)
    ranked = np.argsort(-dense.norm(dim=-1).numpy())
    groups = ReadGroups(((int(ranked[0]), int(ranked[1])), (int(ranked[2]), int(ranked[3]))))
    read = AdaptiveKronrod(KronrodSpec(0.01, 3000, stop="read")).attribute(replace(problem, read=groups))
    bound = AdaptiveKronrod(KronrodSpec(0.01, 3000, stop="bound")).attribute(problem)
    assert not read.exhausted
    assert read.trace[-1, 4] > 0
    scores = groups.group_sums(read.e[0].norm(dim=-1).double().numpy()[None])[:, 0]
    assert scores[0] > scores[1]  # the dense quadrature's order
    assert read.grad_evals < bound.grad_evals


def test_the_method_interface_reads_the_spans_within_its_read_positions():
    """Through ``attribute(Problem)`` (the swap study's reruns): the spans inside ``read`` are the groups, the
    unread rest is not; fewer than two read spans give none."""
    from xurs_pipeline.attribution.methods import Problem
    from xurs_pipeline.attribution.methods.engine import read_groups

    x = torch.zeros(1, 6, 2)
    spans = ((1, 2), (4,), (0, 3, 5))
    problem = Problem(lambda *a: None, x, 0, spans=spans, read=(1, 2, 4))
    assert read_groups(problem, "l2") == ReadGroups(((1, 2), (4,)), "l2")
    assert read_groups(Problem(lambda *a: None, x, 0, spans=spans, read=(1, 2)), "l2") is None
    assert read_groups(Problem(lambda *a: None, x, 0, spans=spans), "l2") is None
