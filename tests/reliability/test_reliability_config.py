"""Every config key is checked against the structured schema before any work, and errors name the key.

The keys are enumerated from the schema itself (``RootConfig`` and its nested dataclasses), so a field
added later is covered without editing this file: every integer (counts, sizes, seeds) refuses -1,
every float refuses -2, every probability or share refuses 1.5, every key refuses a value of the wrong
type and a misspelt neighbour. A stage given such a params.yaml exits with status 2 and the key's name
before it reads or writes anything.
"""

from __future__ import annotations

import copy
import re
import typing
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from reliability_proc import run_stage
from reliability_project import ROOT, smoke_params

from xurs_pipeline.cli import main as cli_main
from xurs_pipeline.config import ConfigError, RootConfig, load_params, validate
from xurs_pipeline.io import ArtifactError, write_json
from xurs_pipeline.models.atomic_dir import atomic_directory

BASE = smoke_params()
# Probabilities, shares, fractions and correlations: values above 1 mean nothing.
UNIT_KEYS = {
    "data.medqa_train_fraction",
    "train.warmup_fraction",
    "train.lora_dropout",
    "model.head_dropout",
    "evaluation.confidence",
    "evaluation.ranking.median_section_spearman_min",
    "evaluation.ranking.top_option_agreement_min",
    "evaluation.ranking.mean_topk_overlap_min",
    "evaluation.ranking.median_share_difference_max",
    *(
        f"evaluation.{s}.{k}"
        for s in ("numerics", "ig")
        for k in ("median_spearman_min", "median_topk_overlap_min", "median_cosine_min")
    ),
    "evaluation.gates.accuracy_min",
    "evaluation.gates.width_drop_share_min",
}
UNIT_WORDS = (
    "fraction",
    "dropout",
    "confidence",
    "share",
    "overlap",
    "agreement",
    "spearman",
    "cosine",
    "accuracy",
)


def _leaves(cls: type, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, annotated type) of every leaf field of a config dataclass."""
    hints = typing.get_type_hints(cls)
    out: list[tuple[str, Any]] = []
    for f in fields(cls):
        kind = hints[f.name]
        if is_dataclass(kind):
            out += _leaves(kind, f"{prefix}{f.name}.")
        else:
            out.append((f"{prefix}{f.name}", kind))
    return out


LEAVES = _leaves(RootConfig)


def _with(key: str, value: Any) -> dict[str, Any]:
    params = copy.deepcopy(BASE)
    *parents, name = key.split(".")
    node = params
    for part in parents:
        node = node[part]
    node[name] = value
    return params


def _fails_naming(params: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate(params, source="params.yaml")
    assert key in str(err.value), f"error does not name {key}: {err.value}"


def test_the_committed_and_the_smoke_params_validate() -> None:
    assert load_params(ROOT / "params.yaml").experiment_name
    assert validate(copy.deepcopy(BASE)).experiment_name == "smoke"
    assert len(LEAVES) > 100


@pytest.mark.parametrize("key", [k for k, t in LEAVES if t is int])
def test_negative_counts_sizes_and_seeds_fail_naming_the_key(key: str) -> None:
    _fails_naming(_with(key, -1), key)


@pytest.mark.parametrize("key", [k for k, t in LEAVES if t is float])
def test_negative_rates_and_thresholds_fail_naming_the_key(key: str) -> None:
    _fails_naming(_with(key, -2.0), key)


def test_every_probability_like_key_is_range_checked() -> None:
    floats = {k for k, t in LEAVES if t is float}
    named = {k for k in floats if any(w in k.rsplit(".", 1)[-1] for w in UNIT_WORDS)}
    assert named <= UNIT_KEYS <= floats


@pytest.mark.parametrize("key", sorted(UNIT_KEYS))
def test_probabilities_above_one_fail_naming_the_key(key: str) -> None:
    _fails_naming(_with(key, 1.5), key)


WRONG = {int: "many", float: "much", bool: "maybe", list[int]: 5, list[str]: {"a": 1}}


@pytest.mark.parametrize("key", [k for k, t in LEAVES if t in WRONG])
def test_values_of_the_wrong_type_fail_naming_the_key(key: str) -> None:
    kind = dict(LEAVES)[key]
    _fails_naming(_with(key, WRONG[kind]), key)


@pytest.mark.parametrize("key", [k for k, _ in LEAVES])
def test_misspelt_keys_fail_naming_the_key(key: str) -> None:
    *parents, name = key.split(".")
    misspelt = ".".join([*parents, name[:-1] + name[-1] * 2])  # "seed" -> "seedd"
    params = _with(misspelt, 1)
    _fails_naming(params, misspelt)


def test_counts_of_zero_samples_fail() -> None:
    for key in ("attribution.n_samples", "attribution.samples_per_call", "evaluation.n_random"):
        _fails_naming(_with(key, 0), key)


def test_malformed_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("data:\n  families: [1, 2\nmodel:\n  backbone: tiny\n")
    with pytest.raises(ConfigError, match=r"params\.yaml.*line 2"):
        load_params(path)


def _renamed(params: dict[str, Any], section: str, old: str, new: str) -> dict[str, Any]:
    params[section][new] = params[section].pop(old)
    return params


@pytest.mark.parametrize(
    ("params", "overrides", "code", "message"),
    [
        (_renamed(smoke_params(), "train", "lr_head", "lr_haed"), (), 2, "train.lr_haed"),  # misspelt
        (_with("train.lr_head", -0.01), (), 2, "train.lr_head=-0.01: must be positive"),
        (BASE, ("+train.lr_haed=1",), 2, "train.lr_haed"),  # misspelt, added on the command line
        (BASE, ("train.seed=seven",), 2, "train.seed"),
        (BASE, ("train.lr_haed=1",), 1, "lr_haed"),  # Hydra refuses to override a missing key
        ("data:\n  families: [4, 1\n", (), 2, "is not valid YAML"),  # with its line and column
    ],
    ids=["misspelt", "negative", "added-misspelt", "wrong-type", "override-misspelt", "not-yaml"],
)
def test_a_stage_refuses_a_bad_config_before_any_work(
    tmp_path: Path, params: dict[str, Any] | str, overrides: tuple[str, ...], code: int, message: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    text = params if isinstance(params, str) else yaml.safe_dump(params, sort_keys=False)
    (project / "params.yaml").write_text(text)
    status, log = run_stage(project, "train", *overrides)
    assert status == code, log[-2000:]
    assert message in log, log[-2000:]
    assert not (project / "data").exists()
    assert not (project / ".cache").exists()


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["model=nosuch"], r"Could not find 'model/nosuch' \(available options in 'model': .*tiny"),
        (
            ["experiment=nosuch"],
            r"Could not find 'experiment/nosuch' \(available options in 'experiment': .*smoke",
        ),
        (["train.lr_head=[1"], r"overrides \['train\.lr_head=\[1'\]: no viable alternative at input '\[1'"),
        (["train.lr_head=inf"], r"train\.lr_head=inf: must be a finite number"),
        (
            ["paths.artifacts=../outside"],
            r"paths\.artifacts='\.\./outside' resolves to .*, outside the repository",
        ),
    ],
)
def test_xurs_params_answers_bad_overrides_in_one_line(
    overrides: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 15, item 7: no Hydra traceback, one line naming the override and what is allowed."""
    out = tmp_path / "params.yaml"
    code = cli_main(["params", "--conf", str(ROOT / "conf"), "--out", str(out), *overrides])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(expected, err), err
    assert not out.exists()


def test_an_output_directory_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    """Issue 15, item 7: an output that cannot be created gives ArtifactError naming the directory
    (a file standing where the directory should be: root ignores permission bits, not this)."""
    (tmp_path / "data").write_text("not a directory")
    target = tmp_path / "data" / "prepared" / "summary.json"
    with pytest.raises(
        ArtifactError, match=r"data/prepared/summary\.json: cannot write into .*data/prepared"
    ):
        write_json({"a": 1}, target)
    with pytest.raises(ArtifactError, match=r"cannot write into"), atomic_directory(tmp_path / "data" / "c"):
        pass
