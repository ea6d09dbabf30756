"""``xurs plan``'s inputs: prepared prompts size a plan only when they were prepared for the planned ``data``
section, and every numeric option is range-checked (one line naming the option, exit 2, nothing printed)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from xurs_pipeline.cli import main as xurs
from xurs_pipeline.config import compose, validate
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.data.schema import prompts_provenance
from xurs_pipeline.io import write_parquet
from xurs_pipeline.planning.estimate import gradient_evaluations
from xurs_pipeline.planning.workload import resolve_workload

ROOT = Path(__file__).resolve().parents[2]


def _prepare_like(project: Path, experiment: str, lengths: list[int]) -> None:
    """Prepared prompts as ``experiment``'s prepare stage stamps them: two test prompts, given lengths."""
    cfg = validate(compose([f"experiment={experiment}"], conf_dir=ROOT / "conf"))
    splits = ["train"] * (len(lengths) - 2) + ["test", "test"]
    frame = pd.DataFrame({"split": splits, "input_ids": [[1] * n for n in lengths]})
    path = project / cfg.paths.artifacts / "prepared" / "prompts.parquet"
    write_parquet(frame, path, prompts_provenance(data_config_hash(cfg.data)), ["split", "input_ids"])


def test_prompts_prepared_for_another_data_config_size_nothing(tmp_path: Path) -> None:
    _prepare_like(tmp_path, "smoke", [40, 50, 333, 60])
    smoke = validate(compose(["experiment=smoke"], conf_dir=ROOT / "conf"))
    own = resolve_workload(smoke, tmp_path)
    assert (own.prompt_tokens, own.train_examples, own.questions) == (333, 2, 2)
    llama = validate(compose(["experiment=paper_llama2"], conf_dir=ROOT / "conf"))
    other = resolve_workload(llama, tmp_path, train_examples=10178)
    assert (other.prompt_tokens, other.questions, other.dev_examples) == (
        llama.data.max_tokens,
        llama.attribution.max_questions,
        0,
    )
    changed = validate(compose(["experiment=smoke", "data.seed=5"], conf_dir=ROOT / "conf"))
    assert (
        resolve_workload(changed, tmp_path, train_examples=9, questions=3).prompt_tokens
        == changed.data.max_tokens
    )


def test_questions_zero_means_every_question_as_max_questions_zero(tmp_path: Path) -> None:
    smoke = validate(compose(["experiment=smoke", "attribution.max_questions=1"], conf_dir=ROOT / "conf"))
    with pytest.raises(ValueError, match=r"give --questions N"):
        resolve_workload(smoke, tmp_path, train_examples=3, questions=0)  # nothing prepared: unknown
    _prepare_like(tmp_path, "smoke", [40, 50, 30, 60, 70])
    assert resolve_workload(smoke, tmp_path).questions == 1  # attribution.max_questions=1
    assert resolve_workload(smoke, tmp_path, questions=0).questions == 2  # every test question


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--questions", "-3"),
        ("--prompt-tokens", "-1"),
        ("--prompt-tokens", "0"),
        ("--train-examples", "-5"),
        ("--sample-seconds", "-1"),
        ("--sample-seconds", "nan"),
        ("--sample-seconds", "inf"),
        ("--train-seconds", "0"),
        ("--train-seconds", "x"),
    ],
)
def test_numeric_options_are_range_checked(
    option: str,
    value: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        xurs(["plan", "experiment=smoke", f"--conf={ROOT / 'conf'}", "--train-examples", "9", option, value])
    captured = capsys.readouterr()
    assert stop.value.code == 2
    assert captured.out == ""
    assert f"argument {option}: " in captured.err
    assert list(tmp_path.iterdir()) == []


def test_plan_counts_every_piece_of_an_ig_block_path() -> None:
    """IG on a block path: questions x references x pieces (one per block of the prompt) x points, the
    count the stage's bar opens at; the straight path's references x points would be 7 times too few."""
    ig = ["experiment=smoke", "attribution.method=ig", "attribution.path=blocks", "attribution.path_block=16"]
    cfg = validate(compose(ig, conf_dir=ROOT / "conf"))
    assert gradient_evaluations(cfg, questions=3, tokens=100)["attribute"] == 3 * 8 * 7 * 64
    straight = validate(compose([*ig[:2]], conf_dir=ROOT / "conf"))
    assert gradient_evaluations(straight, questions=3, tokens=100)["attribute"] == 3 * 8 * 64
