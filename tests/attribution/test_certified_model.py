"""``attribution.method=certified`` on a real (tiny) model through the attribution interface: agreement with
``kronrod`` where both converge, the row's residual recomputed, the budget flag, the config's validation
(each bad key named in one line, through the user's composition of ``attribution=certified``) and its
second run for App. B.4's vector criteria (``repeat_config``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import PAD_ID, TinyBeliefClassifier, prompts_frame

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.endpoints import (
    input_width,
    natural_widths,
    path_values,
    prepared_widths,
    prompt_of,
)
from xurs_pipeline.attribution.inputs import reference_pool, select_questions
from xurs_pipeline.attribution.methods import attribute_question, method_for
from xurs_pipeline.attribution.model import Objective
from xurs_pipeline.attribution.question import ReferencePool
from xurs_pipeline.attribution.references import prepare_training
from xurs_pipeline.config import ConfigError, compose, repeat_config, validate
from xurs_pipeline.evaluation.agreement import cosine, relative_distance

CPU = torch.device("cpu")
CONF = "conf"


@pytest.fixture(scope="module")
def model() -> TinyBeliefClassifier:
    return TinyBeliefClassifier(vocab=40).requires_grad_(False)


def _rows(model, frame, **overrides):
    keys = {"progress": False, "refs_per_collection": 3, "method": "certified", **overrides}
    cfg = AttributionConfig(**keys)
    pool = ReferencePool(*reference_pool(frame, cfg, 64))
    pool.natural = [natural_widths(model, ids, 4, CPU) for ids in pool.token_ids]
    return [attribute_question(model, q, pool, cfg, PAD_ID).rows[0] for q in select_questions(frame, cfg, 64)]


TIGHT = {"certified_tolerance": 1e-3, "certified_vector_tolerance": 0.02, "certified_max_evals": 4000}


@pytest.fixture(scope="module")
def two_seeds(model):
    """One question against 3 training references, certified at tight tolerances with two seeds."""
    frame = prompts_frame(n_test=1, n_train=3)
    return frame, _rows(model, frame, **TIGHT)[0], _rows(model, frame, seed=99, **TIGHT)[0]


def test_certified_agrees_with_kronrod_where_both_converge(model, two_seeds) -> None:
    """Certified at tight tolerances and kronrod to a mean bound of 1e-3 give the same averaged coordinate
    vector (cosine >= 0.9999, relative distance <= 0.02); certified's row is complete, its residual
    recomputed from its coordinates, its evaluations and forwards counted."""
    frame, row, _ = two_seeds
    (k,) = _rows(model, frame, method="kronrod", kronrod_tolerance=1e-3, kronrod_max_evals=4000)
    assert not row.budget_exhausted
    assert not k.budget_exhausted
    assert row.method == "certified"
    e_c, e_k = row.coords["e"].numpy(), k.coords["e"].numpy()
    assert cosine(e_c, e_k) >= 0.9999
    assert relative_distance(e_c, e_k) <= 0.02
    assert row.residual == pytest.approx(abs(float(e_c.sum()) - row.width_difference), abs=1e-6)
    assert row.residual <= 1e-3
    assert row.residual <= row.error_bound
    assert row.grad_evals == sum(row.reference_points)  # every node evaluated once (nested doubling)
    assert row.forward_evals == 1 + 3  # F(X) and each prepared reference: the exact endpoint differences


def test_other_shifts_give_another_estimate_of_the_same_attribution(two_seeds) -> None:
    """Two seeds: different vectors (the shifts are random, a check that can fail), both complete to the
    tolerance and within App. B.4's vector criteria of each other."""
    _, a, b = two_seeds
    e_a, e_b = a.coords["e"].numpy(), b.coords["e"].numpy()
    assert not np.array_equal(e_a, e_b)
    assert max(a.residual, b.residual) <= 1e-3
    assert relative_distance(e_a, e_b) <= 0.1
    assert cosine(e_a, e_b) >= 0.99


def test_the_path_warp_gives_the_same_attribution_and_counts_its_forwards(model, two_seeds) -> None:
    """With ``certified_warp_points`` the lattice runs on each reference's warp: the same vector as the plain
    lattice within App. B.4's criteria (both to a residual of 1e-3), every node still one gradient
    evaluation, and the warp's forwards (15 a reference) counted with the endpoints'."""
    frame, plain, _ = two_seeds
    (warped,) = _rows(model, frame, certified_warp_points=15, **TIGHT)
    assert not warped.budget_exhausted
    assert warped.residual <= 1e-3
    e_w, e_p = warped.coords["e"].numpy(), plain.coords["e"].numpy()
    assert not np.array_equal(e_w, e_p)
    assert cosine(e_w, e_p) >= 0.999
    assert relative_distance(e_w, e_p) <= 0.05
    assert warped.grad_evals == sum(warped.reference_points)
    assert warped.forward_evals == 1 + 3 + 15 * 3


def test_path_values_end_at_the_endpoint_widths(model) -> None:
    """F along the path by forwards alone: at α = 0 each prepared reference's width, at α = 1 the input's
    (Eq. 9's endpoints), both targets grouped as the objective groups them."""
    frame = prompts_frame(n_test=1, n_train=3)
    cfg = AttributionConfig(progress=False, refs_per_collection=3, method="certified")
    pool = ReferencePool(*reference_pool(frame, cfg, 64))
    (q,) = select_questions(frame, cfg, 64)
    prompt = prompt_of(model, q.input_ids, CPU)
    refs = prepare_training(q.input_ids, pool.token_ids[0], pool.record_ids[0], PAD_ID, CPU)
    objective = Objective.build((0, 2), "direct")
    index = np.array([0, 1, 2, 0, 1, 2])
    alpha = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    got = path_values(model, objective, prompt, refs, (index, alpha), batch_size=4)
    w_x = input_width(model, prompt)[0][[0, 2]].double().numpy()
    w_b = prepared_widths(model, prompt, refs, 4)[:, [0, 2]].double().numpy()
    np.testing.assert_allclose(got[:3], w_b, atol=1e-6)
    np.testing.assert_allclose(got[3:], np.tile(w_x, (3, 1)), atol=1e-6)
    assert not np.allclose(w_b, np.tile(w_x, (3, 1)), atol=1e-3)  # the two ends differ: a check that can fail


def test_a_budget_at_the_first_pass_is_flagged_in_the_row(model) -> None:
    frame = prompts_frame(n_test=1, n_train=3)
    (row,) = _rows(model, frame, certified_tolerance=1e-9, certified_max_evals=6)
    assert row.budget_exhausted
    assert row.grad_evals == 6
    assert row.error_bound >= row.residual


def test_the_certified_method_is_registered_and_refuses_block_paths() -> None:
    assert type(method_for(AttributionConfig(method="certified"))).name == "certified"
    with pytest.raises(ValueError, match=r"attribution\.path='blocks' needs a quadrature estimator"):
        AttributionConfig(method="certified", path="blocks")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("attribution.certified_first_nodes=3", r"certified_first_nodes=3: must be a power of 2"),
        ("attribution.certified_tolerance=0", r"attribution\.certified_tolerance=0\.0: must be in \(0, 1\)"),
        ("attribution.certified_tolerance=1e300", r"certified_tolerance=1e\+300: must be in \(0, 1\)"),
        ("attribution.certified_vector_tolerance=2", r"certified_vector_tolerance=2\.0: must be in"),
        (
            "attribution.certified_max_evals=500",
            r"attribution\.certified_max_evals=500: must be >= the first "
            r"pass, certified_first_nodes x refs_per_collection = 2048",
        ),
    ],
)
def test_the_shipped_config_refuses_each_bad_key_in_one_line(override: str, message: str) -> None:
    """``attribution=certified`` composes (256 references, 8 points each in the first pass, 8,192 evaluations,
    the warp of 63 forwards) and each bad value is refused naming its key, in one line."""
    good = validate(compose(["attribution=certified"], conf_dir=CONF)).attribution
    budget = (good.certified_first_nodes, good.certified_max_evals, good.certified_warp_points)
    shipped = (good.method, good.refs_per_collection, *budget)
    assert shipped == ("certified", 256, 8, 8192, 63)
    with pytest.raises(ConfigError, match=message) as err:
        validate(compose(["attribution=certified", override], conf_dir=CONF))
    assert "\n" not in str(err.value)


def test_its_second_run_has_other_shifts_twice_the_budget_and_half_the_tolerances() -> None:
    cfg = validate(compose(["attribution=certified"], conf_dir=CONF))
    again = repeat_config(cfg, 17).attribution
    assert again.seed == 17 != cfg.attribution.seed
    assert again.certified_max_evals == 2 * cfg.attribution.certified_max_evals
    assert again.certified_tolerance == cfg.attribution.certified_tolerance / 2
    assert again.certified_vector_tolerance == cfg.attribution.certified_vector_tolerance / 2
