"""One builder of the training-reference pool with its natural widths F(B) (Eq. 10's endpoint),
``inputs.natural_pool`` / ``ReferencePool.measured``, always under the configured target function: each
reference's values equal the model's masses on that reference alone, through credal's own functions; and
no other module measures a pool."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import AffineMassModel, prompts_frame

from xurs_pipeline import credal
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import natural_pool

ROOT = Path(__file__).resolve().parents[2]


def by_hand(model: AffineMassModel, ids: list[int], fn: str) -> torch.Tensor:
    """F(B) (4,) of one reference at its own length: the masses' width, BetP or predictive entropy."""
    with torch.no_grad():
        masses = model(model.embed(torch.tensor([ids])), None, None).masses.double()
    p = credal.pignistic(masses)
    return {
        "width": credal.credal_width(masses),
        "betp": p,
        "entropy": (-(p * p.log()).sum(-1, keepdim=True)).expand(-1, 4),
    }[fn][0]


@pytest.mark.parametrize("fn", ["width", "entropy", "betp"])
def test_the_pool_holds_each_references_value_of_the_configured_target(fn: str) -> None:
    model, prompts = AffineMassModel(), prompts_frame(n_train=6)
    cfg = AttributionConfig(refs_per_collection=3, n_collections=2, target_fn=fn, eval_batch_size=2)
    pool = natural_pool(model, prompts, cfg, None)
    assert pool is not None
    assert [len(c) for c in pool.token_ids] == [3, 3]
    for ids, natural in zip(pool.token_ids, pool.natural, strict=True):
        expected = torch.stack([by_hand(model, list(i), fn) for i in ids])
        torch.testing.assert_close(natural.double(), expected, atol=1e-5, rtol=1e-5)
    if fn != "width":  # a builder that ignored the target would read the width here
        width = natural_pool(model, prompts, AttributionConfig(refs_per_collection=3, n_collections=2), None)
        assert width is not None
        assert not torch.allclose(width.natural[0], pool.natural[0])


def test_a_method_reading_no_training_reference_gets_no_pool() -> None:
    model, prompts = AffineMassModel(), prompts_frame()
    assert (
        natural_pool(model, prompts, AttributionConfig(reference="zero", refs_per_collection=1), None) is None
    )
    assert natural_pool(model, prompts, AttributionConfig(method="grad_l2"), None) is None


def measuring(files: dict[str, str]) -> list[str]:
    """The files (endpoints.py, which defines it, aside) that call ``natural_widths``."""
    return sorted(
        name for name, text in files.items() if "natural_widths(" in text and "endpoints" not in name
    )


def test_only_the_pool_builder_measures_a_pool() -> None:
    files = {
        str(p.relative_to(ROOT)): p.read_text()
        for d in ("xurs_pipeline", "bench")
        for p in (ROOT / d).rglob("*.py")
    }
    assert measuring(files) == [
        "xurs_pipeline/attribution/question.py"
    ]  # the builder, and the paired reference
    planted = {**files, "bench/planted.py": "pool.natural = [natural_widths(model, ids, 8, cpu)]\n"}
    assert measuring(planted) == ["bench/planted.py", "xurs_pipeline/attribution/question.py"]
