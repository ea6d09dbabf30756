"""The attribution config: range checks name the key; shipped budgets are the paper's (Table 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from xurs_pipeline.attribution.config import AttributionConfig

CONF = Path(__file__).resolve().parents[2] / "conf" / "attribution"


def _load(name: str) -> AttributionConfig:
    """A group file merged over the files its ``defaults`` list names (as Hydra composes it)."""
    raw = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    merged: dict = {}
    for parent in raw.pop("defaults", []):
        if parent != "_self_":
            merged.update(OmegaConf.to_container(OmegaConf.load(CONF / f"{parent}.yaml")))
    return AttributionConfig(**{**merged, **raw})


@pytest.mark.parametrize("name", sorted(p.stem for p in CONF.glob("*.yaml")))
def test_every_shipped_config_is_valid(name: str) -> None:
    """Each file builds (``__post_init__`` refuses a bad value) and keeps every value it sets."""
    config = _load(name)
    own = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    own.pop("defaults", None)
    assert own
    assert {key: getattr(config, key) for key in own} == own


def test_paper_budgets_match_table_5() -> None:
    smollm3, llama = _load("paper_smollm3"), _load("paper_llama2")
    assert (smollm3.n_collections, smollm3.refs_per_collection, smollm3.n_samples) == (1, 256, 512)
    assert (smollm3.samples_per_call, smollm3.precision, smollm3.seed, smollm3.reference_order) == (
        8,
        "float16",
        11,
        "first",
    )
    assert (llama.n_collections, llama.refs_per_collection, llama.n_samples) == (3, 1024, 1024)
    assert (llama.samples_per_call, llama.precision, llama.seed) == (2, "bfloat16", 11)
    assert (llama.reference_order, llama.reference_hash_seed) == ("hash", 20260804)
    assert smollm3.max_questions == llama.max_questions == 100
    ig = _load("ig_adaptive")
    assert (ig.method, ig.precision, ig.refs_per_collection, ig.ig_points, ig.ig_max_points) == (
        "ig",
        "float32",
        128,
        512,
        2048,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "shap"}, "attribution.method='shap': must be one of"),
        ({"samples_per_call": 0}, "attribution.samples_per_call=0: must be >= 1"),
        ({"ig_points": 64, "ig_max_points": 32}, "attribution.ig_max_points=32: must be >= ig_points=64"),
        ({"reference": "zero"}, "attribution.reference='zero' has exactly one reference"),
        ({"ig_tolerance": 0.0}, "attribution.ig_tolerance=0.0: must be in"),
        # a tolerance of a width at or above the largest width passes any run at its first pass
        ({"ig_tolerance": 1.0}, "attribution.ig_tolerance=1.0: must be in"),
        ({"kronrod_tolerance": 1e300}, r"attribution.kronrod_tolerance=1e\+300: must be in"),
        ({"method": "certified", "certified_tolerance": 2.0}, "certified_tolerance=2.0: must be in"),
        # a budget is bounded whichever method reads it (kronrod's under EG, EG's under a token method)
        ({"kronrod_max_evals": 2**23}, "attribution.kronrod_max_evals=8388608: must be <= 4194304"),
        ({"method": "grad_l2", "n_samples": 2**30}, "attribution.n_samples=1073741824: must be <= 4194304"),
        ({"certified_max_evals": 10**12}, "certified_max_evals=1000000000000: must be <= 4194304"),
        ({"record_ids": ["a", "a"]}, "attribution.record_ids: duplicates"),
        ({"precision": "int8"}, "attribution.precision='int8'"),
        ({"reference_alignment": "diff"}, "attribution.reference_alignment='diff': must be one of"),
        ({"kronrod_lead": "median"}, "attribution.kronrod_lead='median': must be one of"),
        (
            {"reference": "aligned", "refs_per_collection": 1, "reference_alignment": "sequence"},
            "attribution.reference_alignment='sequence' fits training prompts to the question: it needs "
            "reference='train'",
        ),
    ],
)
def test_bad_values_name_the_key(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        AttributionConfig(**kwargs)
