"""EG (Eq. 3), IG, routes (Eq. 4) and completeness (Eq. 9) against exact and independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from captum.attr import GradientShap
from captum.attr import IntegratedGradients as CaptumIntegratedGradients
from helpers import PAD_ID, AffineMassModel, TinyBeliefClassifier, prompts_frame

from xurs_pipeline.attribution.config import QUADRATURES, AttributionConfig
from xurs_pipeline.attribution.endpoints import input_width, prepared_widths, prompt_of
from xurs_pipeline.attribution.estimators import IntegratedGradients, PathProblem
from xurs_pipeline.attribution.gradients import accumulate
from xurs_pipeline.attribution.inputs import reference_pool, select_questions
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.model import Objective
from xurs_pipeline.attribution.plan import eg_plan
from xurs_pipeline.attribution.question import ReferencePool
from xurs_pipeline.attribution.references import prepare_training
from xurs_pipeline.credal import credal_width, pignistic

CPU = torch.device("cpu")


def _setup(model, n_train: int = 6):
    frame = prompts_frame(n_train=n_train)
    question = frame[frame["split"] == "test"].iloc[0]
    train = frame[frame["split"] == "train"]
    ids = list(question["input_ids"])
    refs = prepare_training(ids, list(train["input_ids"]), list(train["record_id"]), PAD_ID, CPU)
    return frame, prompt_of(model, ids, CPU), refs


def _run(model, frame, **overrides):
    cfg = AttributionConfig(**{"progress": False, "refs_per_collection": 4, **overrides})
    questions = select_questions(frame, cfg, 64)
    pool = ReferencePool(*reference_pool(frame, cfg, 64)) if cfg.reference == "train" else None
    if pool is not None:
        from xurs_pipeline.attribution.endpoints import natural_widths

        pool.natural = [natural_widths(model, ids, 4, CPU) for ids in pool.token_ids]
    return [attribute_question(model, q, pool, cfg, PAD_ID) for q in questions]


@pytest.mark.parametrize(
    ("method", "extra"),
    [("eg", {"n_samples": 5}), *[("ig", {"ig_quadrature": rule, "ig_points": 3}) for rule in QUADRATURES]],
)
def test_completeness_is_exact_on_affine_model(method: str, extra: dict) -> None:
    """Width is affine in the embeddings: every sample and every quadrature accounts for F(X) - F(B)."""
    model = AffineMassModel()
    frame = prompts_frame()
    for result in _run(model, frame, method=method, target="all", **extra):
        for row in result.rows:
            assert row.residual < 2e-6, (row.record_id, row.target, row.residual)
            assert max(row.residual_collections) < 2e-6
            assert np.isclose(sum(row.token_signed), row.signed_sum, atol=1e-6)
            np.testing.assert_allclose(row.token_magnitude, row.coords["e"].norm(dim=-1), rtol=1e-6)
            if method == "ig":
                assert max(row.reference_residual) < 2e-6


def test_eg_agrees_with_captum_gradient_shap_on_the_same_plan() -> None:
    model = TinyBeliefClassifier(vocab=40)
    _, prompt, refs = _setup(model)
    target, n = 2, 24
    plan = eg_plan(len(refs), n, 11)
    ours = accumulate(model, Objective.build((target,), "direct"), prompt, refs, plan, 8).e[0]

    def width(z, mask, pos):
        return credal_width(model(z, mask, pos).masses, validate=False)[:, target]

    baselines = model.embed(refs.prepared_ids).detach()
    np.random.seed(11)  # noqa: NPY002  GradientShap draws reference indices, then alphas, from numpy's global RNG
    for p in model.parameters():
        p.requires_grad_(False)
    extra = (prompt.attention_mask, prompt.position_ids)
    theirs = GradientShap(width).attribute(
        prompt.embeds, baselines=baselines, n_samples=n, stdevs=0.0, additional_forward_args=extra
    )
    torch.testing.assert_close(ours, theirs[0], atol=1e-6, rtol=1e-5)
    assert ours.abs().max() > 1e-3  # a non-trivial attribution


def test_ig_agrees_with_captum_integrated_gradients_per_reference() -> None:
    model = TinyBeliefClassifier(vocab=40)
    target, n = 1, 8
    prompt_ids = [1, 4, 5, 6, 7, 8]
    one = prepare_training(prompt_ids, [[1, 9, 9]], ["r0"], PAD_ID, CPU)
    prompt = prompt_of(model, prompt_ids, CPU)
    w_x = input_width(model, prompt)[0]
    problem = PathProblem(
        model,
        Objective.build((target,), "direct"),
        prompt,
        one,
        prepared_widths(model, prompt, one, 4),
        w_x,
        4,
    )
    res = IntegratedGradients("gausslegendre", n).attribute(problem)

    def width(z, mask, pos):
        return credal_width(model(z, mask, pos).masses, validate=False)[:, target]

    theirs = CaptumIntegratedGradients(width).attribute(
        prompt.embeds,
        baselines=model.embed(one.prepared_ids).detach(),
        n_steps=n,
        method="gausslegendre",
        additional_forward_args=(prompt.attention_mask, prompt.position_ids),
    )
    torch.testing.assert_close(res.e[0], theirs[0], atol=1e-6, rtol=1e-5)
    assert res.points.tolist() == [n]
    assert res.grad_evals == n


@pytest.mark.parametrize("method", ["eg", "ig"])
def test_direct_and_answer_set_routes_agree_on_the_same_samples(method: str) -> None:
    model = TinyBeliefClassifier(vocab=40)
    frame = prompts_frame(n_test=2)
    kw = {"method": method, "target": "all", "n_samples": 8, "ig_points": 2, "refs_per_collection": 2}
    direct = _run(model, frame, route="direct", **kw)
    answer_set = _run(model, frame, route="answer_set", **kw)
    for a, b in zip(direct, answer_set, strict=True):
        for row_a, row_b in zip(a.rows, b.rows, strict=True):
            assert (row_a.target, row_b.route) == (row_b.target, "answer_set")
            e_a, e_b = row_a.coords["e"], row_b.coords["e"]
            torch.testing.assert_close(e_a, e_b, atol=1e-6, rtol=1e-4)
            cosine = torch.nn.functional.cosine_similarity(e_a.flatten(), e_b.flatten(), dim=0)
            assert cosine > 1 - 1e-6
            assert e_a.abs().max() > 1e-4


def test_explained_answer_is_argmax_betp_of_the_original_prompt() -> None:
    model = TinyBeliefClassifier(vocab=40)
    frame = prompts_frame(n_test=3)
    for result, (_, row) in zip(
        _run(model, frame, n_samples=4), frame[frame.split == "test"].iterrows(), strict=True
    ):
        prompt = prompt_of(model, list(row["input_ids"]), CPU)
        with torch.no_grad():
            masses = model(prompt.embeds, prompt.attention_mask, prompt.position_ids).masses
        (only,) = result.rows
        assert only.target == int(pignistic(masses).argmax()) == only.predicted
        assert np.isclose(only.width_input, float(credal_width(masses)[0, only.target]), atol=1e-7)
    correct = _run(model, frame, n_samples=4, target="correct")
    assert [r.rows[0].target for r in correct] == list(frame[frame.split == "test"]["answer_idx"])
    assert [len(r.rows) for r in _run(model, frame, n_samples=4, target="all")] == [4, 4, 4]


def test_adaptive_ig_refines_only_references_above_tolerance() -> None:
    model = TinyBeliefClassifier(vocab=40)
    _, prompt, refs = _setup(model)
    objective = Objective.build((0, 3), "direct")
    w_x = input_width(model, prompt)[0]
    prep = prepared_widths(model, prompt, refs, 4)
    problem = PathProblem(model, objective, prompt, refs, prep, w_x, 4)
    fixed = IntegratedGradients("riemann_trapezoid", 4).attribute(problem)
    tol = float(np.median(fixed.ref_residual.max(1)))
    refined = IntegratedGradients("riemann_trapezoid", 4, True, tol, 4, 64).attribute(problem)
    above = fixed.ref_residual.max(1) > tol
    assert above.any()
    assert (~above).any()
    assert (refined.points[~above] == 4).all()
    assert (refined.points[above] > 4).all()
    assert set(refined.points.tolist()) <= {4, 16, 64}
    ok = (refined.ref_residual.max(1) <= tol) | (refined.points == 64)
    assert ok.all()
    repeated = 4 * above.sum() + 16 * (refined.points == 64).sum()  # the passes that were refined away
    assert refined.grad_evals == int(refined.points.sum() + repeated)


def test_collections_are_averaged_in_float32_before_magnitudes() -> None:
    model = TinyBeliefClassifier(vocab=40)
    frame = prompts_frame(n_test=1, n_train=8)
    (result,) = _run(model, frame, n_collections=2, n_samples=8)
    (row,) = result.rows
    parts = [row.coords[f"e_collection_{k}"] for k in range(2)]
    torch.testing.assert_close(row.coords["e"], (parts[0] + parts[1]) / 2, atol=0, rtol=0)
    assert len(row.plan_seeds) == 2
    assert row.plan_seeds[0] == 11
    assert row.reference_collection == [0] * 4 + [1] * 4
    assert len(set(row.reference_record_ids)) == 8
    magnitude = torch.as_tensor(row.token_magnitude)
    assert not torch.allclose(magnitude, (parts[0].norm(dim=-1) + parts[1].norm(dim=-1)) / 2)


def test_zero_baseline_and_reference_widths() -> None:
    model = AffineMassModel()
    frame = prompts_frame(n_test=1)
    (result,) = _run(model, frame, reference="zero", refs_per_collection=1, n_samples=3, target="correct")
    (row,) = result.rows
    assert row.reference_record_ids == ["<zero>"]
    assert row.width_reference_natural == [None]
    assert np.isclose(row.width_reference_prepared[0], 7 / 15, atol=1e-6)  # Z = 0: 7 sets of mass 1/15
    assert row.changed_positions == list(range(row.n_tokens))
    assert row.residual < 2e-6


def test_bfloat16_and_nonfinite_detection() -> None:
    frame = prompts_frame(n_test=1)
    model = TinyBeliefClassifier(vocab=40)
    (fp32,) = _run(model, frame, n_samples=8)
    # oneDNN's bfloat16 CPU kernels use AMX, which this kind of VM advertises but traps: use ATen's kernels
    with torch.backends.mkldnn.flags(enabled=False):
        (bf16,) = _run(
            TinyBeliefClassifier(vocab=40).to(torch.bfloat16), frame, n_samples=8, precision="bfloat16"
        )
    assert bf16.rows[0].precision == "bfloat16"
    assert bf16.failure is None
    cosine = torch.nn.functional.cosine_similarity(
        fp32.rows[0].coords["e"].flatten(), bf16.rows[0].coords["e"].flatten(), dim=0
    )
    assert cosine > 0.9
    bad = AffineMassModel()
    train_ids = list(frame[frame.split == "train"]["input_ids"].iloc[2])
    with torch.no_grad():
        bad.embedding.weight[train_ids[1]] = 7.0e4  # finite in float32, inf in float16
    (ok,) = _run(bad, frame, n_samples=8)
    assert ok.failure is None
    (failed,) = _run(bad.to(torch.float16), frame, n_samples=8, precision="float16")
    assert failed.rows == []
    assert failed.failure is not None
    assert failed.failure.record_id == "test-0"
    assert "train-2" in failed.failure.reference_ids
    assert "float16" in failed.failure.message()


def test_the_paper_estimators_magnitude_follows_attribution_reduction() -> None:
    """``own`` keeps the shipped L2 over hidden; ``abs_sum`` records |sum_h e_ih|, the same coordinates and
    signed scores (numpy on the stored coordinates)."""
    model, frame = AffineMassModel(), prompts_frame()
    own, by_abs = (
        _run(model, frame, method="ig", ig_points=3, **keys) for keys in ({}, {"reduction": "abs_sum"})
    )
    for result, other in zip(own, by_abs, strict=True):
        for row, alt in zip(result.rows, other.rows, strict=True):
            e = row.coords["e"].double().numpy()
            np.testing.assert_allclose(row.token_magnitude, np.sqrt((e**2).sum(-1)), rtol=1e-6)
            np.testing.assert_allclose(alt.token_magnitude, np.abs(e.sum(-1)), rtol=1e-6, atol=1e-9)
            np.testing.assert_array_equal(alt.token_signed, row.token_signed)
            assert not np.allclose(alt.token_magnitude, row.token_magnitude)
