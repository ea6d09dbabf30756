"""Hand edits of params.yaml and composed overrides, from a user's project (``xurs params``, ``dvc repro``):

- a key added by hand (misspelt or unknown) stops ``dvc repro`` at the ``check`` stage, which depends on the
  whole params.yaml, naming the key and the closest one; no later stage runs or loses its output;
- a setting a stage would refuse at its start (``train.batch_size`` not dividing ``train.global_batch``)
  is refused by the same check, before any stage deletes an output;
- text that would escape a table (a line break in ``experiment_name``) is refused;
- ``xurs params`` refuses a resolver (``${oc.env:...}``), a dropped key (``~key``, a group option from
  another group) and outputs inside ``.git``, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from smoke_project import BIN, copy_sources, run_any, run_ok

from xurs_pipeline.fingerprint import sha256_file

pytestmark = pytest.mark.slow  # a DVC project of the smoke experiment, run up to its backbone


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke experiment composed and reproduced up to ``backbone`` by DVC (the check stage first)."""
    work = copy_sources(tmp_path_factory.mktemp("hand") / "xurs")
    run_ok([str(BIN / "dvc"), "init", "--no-scm", "-q"], work)
    run_ok([str(BIN / "xurs"), "params", "experiment=smoke"], work)
    run_ok([str(BIN / "dvc"), "repro", "backbone"], work)
    return work


@pytest.fixture
def edited(project: Path) -> Iterator[Path]:
    """The project; its params.yaml and check stamp restored after the test."""
    params = project / "params.yaml"
    good = params.read_text()
    yield project
    params.write_text(good)
    run_ok([str(BIN / "dvc"), "repro", "backbone"], project)


def _edit(project: Path, change) -> None:  # type: ignore[no-untyped-def]
    params = yaml.safe_load((project / "params.yaml").read_text())
    change(params)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def _repro_refuses(project: Path, *words: str) -> None:
    """``dvc repro backbone`` stops at ``check`` with one line naming ``words``; the backbone is kept."""
    weights = project / "data" / "backbone" / "model.safetensors"
    before = sha256_file(weights)
    result = run_any([str(BIN / "dvc"), "repro", "backbone"], project)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    (line,) = [line for line in out.splitlines() if line.startswith("check: ")]
    for word in words:
        assert word in line, line
    assert "Traceback" not in out, out
    assert "up to date" not in out, out
    assert "Running stage 'backbone'" not in out, out
    assert sha256_file(weights) == before


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda p: p["train"].update(lr_haed=0.5), ("'train.lr_haed'", "did you mean 'train.lr_head'")),
        (lambda p: p.update(trian={"seed": 3}), ("'trian'", "did you mean 'train'")),
        (lambda p: p.update(unknownkey=1), ("'unknownkey'",)),
    ],
    ids=["misspelt", "misspelt-section", "unknown-top-level"],
)
def test_a_key_added_by_hand_stops_dvc_repro_naming_it(edited: Path, change, words) -> None:  # type: ignore[no-untyped-def]
    _edit(edited, change)
    _repro_refuses(edited, *words)


def test_a_batch_size_that_cannot_split_the_global_batch_is_refused_by_the_check(edited: Path) -> None:
    _edit(edited, lambda p: p["train"].update(batch_size=3, global_batch=8))
    _repro_refuses(edited, "train.batch_size=3", "train.global_batch=8")
    result = run_any([str(BIN / "xurs"), "check"], edited)
    assert result.returncode == 2, result.stderr
    assert "train.batch_size=3" in result.stderr


def test_a_line_break_in_the_experiment_name_is_refused(edited: Path) -> None:
    _edit(edited, lambda p: p.update(experiment_name="smoke\n\\input{/etc/hostname}\n"))
    _repro_refuses(edited, "experiment_name=")


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("experiment_name=${oc.env:PATH}", ("experiment_name=", "environment")),
        ("train.seed=${oc.env:XURS_SEED,7}", ("train.seed=", "environment")),
        ("~train.lr_head", ("no value for train.lr_head",)),
        ("train=../experiment/local", ("no value for train.",)),
        ("paths.artifacts=data/../.git", ("paths.artifacts=", ".git/")),
        ("train.batch_size=3", ("train.batch_size=3",)),
    ],
)
def test_xurs_params_refuses_what_would_store_the_environment_or_drop_a_key(
    tmp_path: Path, override: str, words: tuple[str, ...]
) -> None:
    work = copy_sources(tmp_path / "xurs")
    result = run_any([str(BIN / "xurs"), "params", "experiment=smoke", override], work)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    for word in words:
        assert word in line, line
    assert not (work / "params.yaml").exists()
