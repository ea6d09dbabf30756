"""The planted positive control (issue 14, item 5): attribute -> zero-masking -> checks on a model whose
answer is known exactly (``planted.PlantedClueModel``). It catches a broken chain in seconds, whatever
happens to the trained models: the planted tokens must rank first with the known sign and the known
F(X) - F(B), completeness must hold, the zero-masking interval must exclude zero, and each of these must
fail where it should (too coarse a quadrature, a model without a clue, a randomised model)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planted import CLUE_IDS, PlantedClueModel, planted_prompts

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.runner import RunOutput, run_attribution
from xurs_pipeline.evaluation.artifacts import read_attributions, run_records
from xurs_pipeline.evaluation.clue_masking import clue_masking_frame, clue_masking_run, summarise_clue_masking
from xurs_pipeline.evaluation.config import NumericsThresholds
from xurs_pipeline.evaluation.mask_eval import BootstrapSpec, effects_frame, mask_run, select_rows, summarise
from xurs_pipeline.evaluation.masking import MaskingSpec
from xurs_pipeline.evaluation.randomisation import cascade_names, randomisation_check
from xurs_pipeline.evaluation.run_checks import CheckedRun, completeness_checks

IG = {
    "method": "ig",
    "reference": "zero",
    "n_collections": 1,
    "refs_per_collection": 1,
    "ig_points": 32,
    "target": "predicted",
    "split": "test",
    "progress": False,
    "reuse_prefix": False,
}
THRESHOLDS = NumericsThresholds()  # App. B.4: residual median <= 0.01, max <= 0.05


def attribute(model, prompts: pd.DataFrame, out: Path, **overrides) -> pd.DataFrame:
    """The attribute stage's library call, then the artifact read back as the next stages read it."""
    run_attribution(
        model,
        prompts,
        AttributionConfig(**{**IG, **overrides}),
        pad_id=0,
        max_positions=64,
        out=RunOutput(out, "planted"),
    )
    return read_attributions(out, "planted")


def zero_masking(model, prompts: pd.DataFrame, attributions: pd.DataFrame) -> dict[str, object]:
    """The mask_eval stage's library calls: Eq. 8 effects and the question-level bootstrap interval."""
    rows = select_rows(attributions, ["width"], 0)
    spec = MaskingSpec(n_random=20, k_max=1, seed=0, batch_size=16)
    effects = mask_run(classifier_mass_fn(model), model.embed, prompts, rows, spec, model.u.device)
    frame = effects_frame(effects)
    return {"frame": frame, **summarise(frame, BootstrapSpec(2000, 0.95, "percentile", 0))["width"]}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    model, prompts = PlantedClueModel(), planted_prompts()
    out = tmp_path_factory.mktemp("planted")
    attributions = attribute(model, prompts, out)
    return model, prompts, attributions, out


def test_planted_tokens_rank_first_with_the_known_sign_and_size(chain) -> None:
    model, prompts, attributions, _ = chain
    by_id = prompts.set_index("record_id")
    assert len(attributions) == (prompts["split"] == "test").sum()
    for row in attributions.itertuples():
        ids, clues = by_id.loc[row.record_id, "input_ids"], by_id.loc[row.record_id, "clue_positions"]
        signed, magnitude = np.asarray(row.token_signed), np.asarray(row.token_magnitude)
        ranked = np.argsort(-magnitude, kind="stable")
        assert sorted(ranked[: len(clues)].tolist()) == sorted(clues)  # the planted tokens rank first
        others = np.setdiff1d(np.arange(len(ids)), clues)
        np.testing.assert_allclose(signed[others], 0.0, atol=1e-7)  # every other token gets exactly 0
        assert (signed[clues] < 0).all()  # a clue lowers the width
        # F(X) - F(B) known in closed form: W(X) - W(0) = (1 - sigmoid(gain s)) - 1/2, shared equally.
        expected = model.exact_width(list(ids)) - 0.5
        assert row.width_input == pytest.approx(model.exact_width(list(ids)), abs=1e-6)
        assert signed.sum() == pytest.approx(expected, rel=1e-3)
        np.testing.assert_allclose(signed[clues], expected / len(clues), rtol=1e-3)


def test_completeness_holds_and_fails_with_a_one_point_quadrature(chain, tmp_path) -> None:
    _, prompts, attributions, out = chain
    checks = completeness_checks(CheckedRun("planted", attributions, out), THRESHOLDS, THRESHOLDS)
    assert checks
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    steep = PlantedClueModel(gain=6.0)  # a sharp sigmoid: one midpoint cannot integrate it
    coarse = attribute(steep, prompts, tmp_path, ig_points=1)
    failed = completeness_checks(CheckedRun("coarse", coarse, tmp_path), THRESHOLDS, THRESHOLDS)
    assert not all(c.passed for c in failed)


def test_zero_masking_interval_excludes_zero_and_includes_it_without_a_clue(chain, tmp_path) -> None:
    model, prompts, attributions, _ = chain
    result = zero_masking(model, prompts, attributions)
    frame = result["frame"]
    by_id = prompts.set_index("record_id")
    for row in frame.itertuples():  # the top token is a clue token; masking it raises the width
        assert by_id.loc[row.record_id, "input_ids"][row.top_positions[0]] in CLUE_IDS
        assert row.d_top > 0.05
    assert result["ci_low"] > 0  # Table 1's interval lies above zero
    blind = PlantedClueModel(strength=0.0)  # same chain, a model that cannot see the clue
    blind_result = zero_masking(blind, prompts, attribute(blind, prompts, tmp_path))
    assert blind_result["ci_low"] <= 0 <= blind_result["ci_high"]


def test_randomising_the_model_moves_the_attribution_off_the_planted_tokens(chain, tmp_path) -> None:
    model, prompts, attributions, _ = chain
    record_ids = list(attributions["record_id"])
    runs: list[int] = []

    def attribute_fn(candidate):
        runs.append(1)
        frame = attribute(candidate, prompts, tmp_path / f"run{len(runs)}")
        return run_records(frame[frame["record_id"].isin(record_ids)], prompts, None)

    cascade = cascade_names(model, "head", 1)
    assert cascade == ["head", "blocks.0"]
    moved = randomisation_check(model, attribute_fn, cascade, seed=3, topk=2)
    after_blocks = moved[moved["randomised"] == "blocks.0"]
    # The head only scales the clue score: the ranking survives it. Randomising the block that decides
    # which direction counts must move the attribution away from the planted tokens.
    assert after_blocks["spearman"].median() < 0.5


def test_masking_the_clue_beats_every_equal_length_control_window(chain) -> None:
    model, prompts, attributions, _ = chain
    rows = select_rows(attributions, ["width"], 0)
    for candidate, above_zero in ((model, True), (PlantedClueModel(strength=0.0), False)):
        effects = clue_masking_run(
            classifier_mass_fn(candidate), candidate.embed, prompts, rows, 16, candidate.u.device
        )
        frame = clue_masking_frame(effects)
        assert len(frame) == len(rows)
        summary = summarise_clue_masking(frame, 2000, 0.95, "percentile", 0)
        if above_zero:  # masking the clue restores the no-clue width; windows of other tokens change nothing
            np.testing.assert_allclose(frame["d_window_max"], 0.0, atol=1e-12)
            expected = [
                0.5 - model.exact_width(list(ids))
                for ids in prompts.set_index("record_id").loc[frame["record_id"], "input_ids"]
            ]
            np.testing.assert_allclose(frame["d_clue"], expected, rtol=1e-6)
            assert summary["ci_low"] > 0
        else:
            assert summary["ci_low"] <= 0 <= summary["ci_high"]
