"""``evaluation.compare_methods``: the further methods the pipeline explains the main run's questions with
(stage ``attribute_compare``), checked where a user sets it (``xurs params``), read by that stage alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from xurs_pipeline.cli import main
from xurs_pipeline.config import compare_configs, compose, validate
from xurs_pipeline.contracts import stage_hash

CONF = Path(__file__).resolve().parents[2] / "conf"


def _params(tmp_path: Path, *overrides: str) -> int:
    out = tmp_path / "params.yaml"
    return main(
        ["params", "--conf", str(CONF), "--out", str(out), "--no-dvc-yaml", "experiment=smoke", *overrides]
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["evaluation.compare_methods=[occlusion]"],
            "compare_methods=['occlusion']: must be distinct names from",
        ),
        (
            ["evaluation.compare_methods=[grad_l2,grad_l2]"],
            "compare_methods=['grad_l2', 'grad_l2']: must be distinct",
        ),
        (
            ["evaluation.compare_methods=[grad_l2,eg]"],
            "evaluation.compare_methods: 'eg' is attribution.method",
        ),
        (
            ["attribution.method=layer_ig", "evaluation.compare_methods=[layer_ig]"],
            "evaluation.compare_methods: 'layer_ig' is attribution.method",
        ),
        (
            ["attribution.route=answer_set", "evaluation.compare_methods=[grad_l2]"],
            "evaluation.compare_methods: 'grad_l2': attribution.route='answer_set'",
        ),
        (
            [
                "attribution.reference=aligned",
                "attribution.refs_per_collection=1",
                "evaluation.compare_methods=[grad_l2,layer_ig]",
            ],
            "evaluation.compare_methods: 'layer_ig': attribution.method=",
        ),
    ],
)
def test_a_bad_compare_method_is_one_line_naming_the_key_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: list[str], message: str
) -> None:
    assert _params(tmp_path, *overrides) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert message in line
    assert not (tmp_path / "params.yaml").exists()


def test_good_compare_methods_are_written_and_keep_the_main_runs_settings_but_the_method(
    tmp_path: Path,
) -> None:
    assert (
        _params(
            tmp_path,
            "attribution.replacement=mean",
            "attribution.method=occlusion_token",
            "evaluation.compare_methods=[kronrod,grad_l2]",
        )
        == 0
    )
    written = yaml.safe_load((tmp_path / "params.yaml").read_text())
    assert written["evaluation"]["compare_methods"] == ["kronrod", "grad_l2"]
    cfg = validate(written)
    others = compare_configs(cfg)
    assert list(others) == ["kronrod", "grad_l2"]  # the listed order (the report shows the first)
    for method, other in others.items():
        assert other.attribution.method == method
        assert other.attribution.replacement == "zero"  # occlusion's own key back at its default
        assert other.attribution.n_samples == cfg.attribution.n_samples
        assert other.evaluation == cfg.evaluation
        assert other.data == cfg.data
    assert compare_configs(validate(compose(["experiment=smoke"], CONF))) == {}  # the default: none


def test_only_the_compare_stage_and_the_whole_config_stages_read_the_key() -> None:
    """Changing the further methods reruns ``attribute_compare`` (and the report), never the main run."""
    one = validate(compose(["experiment=smoke", "evaluation.compare_methods=[grad_l2]"], CONF))
    two = validate(
        compose(["experiment=smoke", "evaluation.compare_methods=[grad_l2,occlusion_token]"], CONF)
    )
    changed = {
        s
        for s in ("attribute", "attribute_compare", "mask_eval", "checks", "report")
        if stage_hash(s, one) != stage_hash(s, two)
    }
    assert changed == {"attribute_compare", "report"}
