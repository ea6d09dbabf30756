"""The swap entries' grammar (``attribution/variants.py``) refuses, in one line with the config, what the swap
stage would otherwise take silently or refuse late: a key given twice, one computation under two names, a
``train:k`` larger than the training split, a YAML list item read as a mapping, digits outside 0-9."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from xurs_pipeline.attribution.variants import reduction_twins
from xurs_pipeline.cli import main
from xurs_pipeline.config import ConfigError, compose, validate
from xurs_pipeline.data.dataset import load_records
from xurs_pipeline.evaluation.config import EvaluationConfig
from xurs_pipeline.evaluation.swap.readings import NULL_METHODS, RUN_METHOD, method_configs

ROOT = Path(__file__).resolve().parents[2]


def refused(methods: list[str]) -> str:
    with pytest.raises(ValueError, match=r"^evaluation\.swap_methods: ") as info:
        EvaluationConfig(swap_methods=methods)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize(
    "entry",
    [
        "occlusion_token@replacement=mean,replacement=zero",
        "layer_ig@references=zero,references=pad",
        "sequential_ig@sequential_ig_steps=4,references=zero,sequential_ig_steps=8",
    ],
)
def test_a_key_given_twice_is_refused_not_the_last_one_kept(entry: str) -> None:
    assert "given twice (give each key once)" in refused(["paper", entry])
    EvaluationConfig(swap_methods=["paper", entry.rpartition(",")[0]])  # once: accepted


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("layer_ig", "layer_ig@references=train:1"),  # an entry without references reads train:1
        ("occlusion_token@replacement=reference", "occlusion_token@references=train:1"),
        ("grad_l2", "grad_l2@reduction=l2"),  # grad_l2's own reduction is L2
        ("layer_ig", "layer_ig@layer_ig_steps=32"),  # evaluation.swap_layer_ig_steps' default
        ("layer_ig@references=zero,layer_ig_steps=8", "layer_ig@layer_ig_steps=8,references=zero"),
        ("paper@references=train:2", "paper@references=train:2,reduction=own"),
    ],
)
def test_one_computation_under_two_names_is_refused_naming_both(first: str, second: str) -> None:
    assert f"{second!r} computes what {first!r} computes" in refused(["paper", first, second])


@pytest.mark.parametrize(
    "methods",
    [
        ["paper", "layer_ig", "layer_ig@references=train:2"],
        ["paper", "grad_l2", "grad_l2@reduction=abs_sum"],
        ["paper", "occlusion_token", "occlusion_token@references=train:1"],
    ],  # zero vs the first reference
)
def test_different_computations_of_one_method_are_kept(methods: list[str]) -> None:
    assert EvaluationConfig(swap_methods=methods).swap_methods == methods


def test_the_layer_ig_steps_the_study_sets_decide_what_is_the_same_computation() -> None:
    methods = ["paper", "layer_ig", "layer_ig@layer_ig_steps=32"]
    assert EvaluationConfig(swap_methods=methods, swap_layer_ig_steps=16).swap_methods == methods
    with pytest.raises(ValueError, match="computes what 'layer_ig' computes"):
        EvaluationConfig(swap_methods=methods, swap_layer_ig_steps=32)


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ("layer_ig@references=train:\u00b2", "references='train:²': must be zero, pad, counterfactual"),
        ("occlusion_token@references=marginal:\u0663", "references='marginal:٣': must be zero, pad"),
        ("sequential_ig@sequential_ig_steps=\u0663", "sequential_ig_steps must be an integer, got '٣'"),
    ],
)
def test_digits_outside_0_to_9_get_the_grammars_message(entry: str, named: str) -> None:
    message = refused(["paper", entry])
    assert named in message
    assert "invalid literal" not in message


def test_a_list_item_yaml_reads_as_a_mapping_is_one_line_naming_the_item() -> None:
    text = "evaluation:\n  swap_methods:\n    - paper\n    - occlusion_token@references=marginal:\n"
    raw = yaml.safe_load(text)
    with pytest.raises(ConfigError) as info:
        validate(raw)
    message = str(info.value)
    assert "'evaluation.swap_methods[1]': expected a value, got a mapping" in message
    assert "quote it ('occlusion_token@references=marginal:')" in message
    assert "\n" not in message
    quoted = yaml.safe_load("evaluation:\n  swap_methods: [paper, 'occlusion_token@references=marginal:4']\n")
    assert validate(quoted).evaluation.swap_methods[1] == "occlusion_token@references=marginal:4"


def _swap_params(tmp_path: Path, methods: list[str]) -> Path:
    composed = compose(["experiment=controlled_swap"], ROOT / "conf")
    composed["evaluation"]["swap_methods"] = methods
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(composed))
    return path


def test_check_refuses_train_k_above_the_training_split_before_any_stage(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no prepared prompts here: the records the data section describes
    data = validate(compose(["experiment=controlled_swap"], ROOT / "conf")).data
    held = sum(r.split == "train" for r in load_records(data))
    over = f"layer_ig@references=train:{held + 1}"
    assert main(["check", "--params", str(_swap_params(tmp_path, ["paper", over]))]) == 2
    err = capsys.readouterr().err
    said = f"{over!r} reads {held + 1} training prompts; the training split of synthetic_swap holds {held}"
    assert said in err
    assert len(err.strip().splitlines()) == 1
    marginal = f"occlusion_token@references=marginal:{held * 2}"  # drawn with replacement: any count
    at_most = ["paper", f"layer_ig@references=train:{held}", marginal]
    assert main(["check", "--params", str(_swap_params(tmp_path, at_most))]) == 0


def test_the_equal_terms_grid_counts_its_computations_as_the_page_states() -> None:
    """docs/swap-control.md states how many computations the grid's run entries are once reduction twins
    share theirs; the count follows the shipped grid (``variants.reduction_twins``)."""
    cfg = validate(compose(["experiment=controlled_swap_equal_terms"], ROOT / "conf"))
    entries = [e for e in cfg.evaluation.swap_methods if e not in (RUN_METHOD, *NULL_METHODS)]
    twins = reduction_twins(list(method_configs(entries, 8, cfg.attribution).values()))
    page = (ROOT / "docs" / "swap-control.md").read_text()
    stated = re.search(r"the grid's (\d+) run entries are (\d+) computations", page)
    assert stated is not None
    assert (int(stated[1]), int(stated[2])) == (len(entries), len(set(twins.values())))
    assert len(set(twins.values())) < len(entries)  # the grid holds twins: a shared computation saves
