"""The bad-input corpus (``corpus/cases.yaml``): every broken MedQA file, synthetic record and config is
refused with the error it is paired with, naming the file and line, the record id or the config key.

The readers are the ones the stages use (``data.dataset.load_records``, ``prepare_and_validate``,
``config.load_params``); one MedQA case also runs through the prepare stage as a process.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from reliability_proc import run_stage
from reliability_project import merge, mini_params, smoke_params, write_project

from xurs_pipeline.config import ConfigError, load_params
from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import load_records, prepare_and_validate
from xurs_pipeline.data.prepare import leakage
from xurs_pipeline.data.records import DataError, QuestionRecord
from xurs_pipeline.data.schema import SPLITS
from xurs_pipeline.data.synthetic import generate_v1, generate_v2

CORPUS = Path(__file__).resolve().parent / "corpus"
CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load((CORPUS / "cases.yaml").read_text())
GENERATORS = {"v1": generate_v1, "v2": generate_v2}


def _cases(kind: str) -> Any:
    return pytest.mark.parametrize("case", CASES[kind], ids=[c["name"] for c in CASES[kind]])


def _matches(case: dict[str, Any], err: BaseException) -> None:
    assert re.search(case["error"], str(err)), f"{case['name']}: {case['error']!r} not found in:\n{err}"


def test_every_corpus_file_has_a_case_and_every_case_a_unique_name() -> None:
    used = {c["file"] for kind in ("medqa", "configs") for c in CASES[kind] if "file" in c}
    files = {str(p.relative_to(CORPUS)) for d in ("medqa", "configs") for p in (CORPUS / d).iterdir()}
    assert files - used == {"medqa/good.jsonl"}
    assert used <= files
    names = [c["name"] for cases in CASES.values() for c in cases]
    assert len(names) == len(set(names)) >= 45


def _medqa_dir(case: dict[str, Any], root: Path) -> Path:
    """A MedQA directory (``{split}.jsonl``): the case's file as its split, the valid file elsewhere."""
    root.mkdir()
    broken = case.get("split", "test")
    for split in SPLITS:
        if split == case.get("missing"):
            continue
        source = case["file"] if split == broken and "file" in case else "medqa/good.jsonl"
        shutil.copy(CORPUS / source, root / f"{split}.jsonl")
    return root


@_cases("medqa")
def test_broken_medqa_files_are_refused(case: dict[str, Any], tmp_path: Path) -> None:
    root = _medqa_dir(case, tmp_path / "medqa")
    with pytest.raises(DataError) as err:
        load_records(DataConfig(source="medqa", medqa_path=str(root), medqa_files="{split}.jsonl"))
    _matches(case, err.value)


def test_valid_medqa_files_are_read(tmp_path: Path) -> None:
    root = _medqa_dir({}, tmp_path / "medqa")
    records = load_records(DataConfig(source="medqa", medqa_path=str(root), medqa_files="{split}.jsonl"))
    assert [r.split for r in records] == ["train"] * 6 + ["dev"] * 6 + ["test"] * 6


def _broken(records: list[QuestionRecord], case: dict[str, Any]) -> QuestionRecord:
    record = records[case["record"]]
    changes: dict[str, Any] = {}
    info: dict[str, Any] = {}
    for key, value in case.get("set", {}).items():
        target = info if key.startswith("synthetic.") else changes
        target[key.removeprefix("synthetic.")] = tuple(value) if isinstance(value, list) else value
    if "shift" in case:
        changes["answer_idx"] = (record.answer_idx + case["shift"]) % 4
    if "replace" in case:
        old, new = case["replace"]
        assert old in record.question, f"{case['name']}: {old!r} not in the generated question"
        changes["question"] = record.question.replace(old, new)
    if "option" in case:
        index, text = case["option"]
        changes["options"] = tuple(text if i == index else o for i, o in enumerate(record.options))
    if "same_id_as" in case:
        changes["record_id"] = records[case["same_id_as"]].record_id
    if info:
        changes["synthetic"] = replace(record.synthetic, **info)
    return replace(record, **changes)


@_cases("synthetic")
def test_broken_synthetic_records_are_refused(case: dict[str, Any]) -> None:
    records = GENERATORS[case["generator"]]((1, 1, 1), 1, 0)
    with pytest.raises(_Valid):  # unchanged, the records pass every check and reach tokenisation
        prepare_and_validate(list(records), _NoTokenizer(), 512, favour_label=case["generator"] == "v1")
    with pytest.raises(DataError) as err:
        _prepare_with_broken(records, case)
    _matches(case, err.value)


def _prepare_with_broken(records: list[QuestionRecord], case: dict[str, Any]) -> None:
    records[case["record"]] = _broken(records, case)  # some breakages are refused right here
    prepare_and_validate(records, _NoTokenizer(), 512, favour_label=case["generator"] == "v1")


class _Valid(Exception):
    """Raised by :class:`_NoTokenizer`: the records got past validation."""


class _NoTokenizer:
    """Stands in for a tokenizer where none is reached: every refusal comes before tokenisation."""

    is_fast = True

    def __call__(self, *args: object, **kwargs: object) -> Any:
        raise _Valid


@_cases("configs")
def test_broken_configs_are_refused(case: dict[str, Any], tmp_path: Path) -> None:
    text = (CORPUS / case["file"]).read_text()
    if not case.get("whole_file"):
        text = yaml.safe_dump(merge(smoke_params(), yaml.safe_load(text)), sort_keys=False)
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_params(tmp_path / "params.yaml")
    _matches(case, err.value)


@pytest.mark.parametrize("name", ["truncated_download", "forged_line_separator", "lone_surrogate_id"])
def test_the_prepare_stage_refuses_a_broken_medqa_file(reference: Path, tmp_path: Path, name: str) -> None:
    case = next(c for c in CASES["medqa"] if c["name"] == name)
    root = _medqa_dir(case, tmp_path / "medqa")
    data = {"source": "medqa", "medqa_path": str(root), "medqa_files": "{split}.jsonl"}
    project = write_project(tmp_path / "p", mini_params(data=data))
    shutil.copytree(reference / "data" / "backbone", project / "data" / "backbone")
    code, log = run_stage(project, "prepare")
    assert code == 2, log[-3000:]  # a deliberate XursError: one line, exit 2 (tasks/runner.py)
    assert re.search(case["error"], log), log[-3000:]
    assert "Traceback" not in log
    assert not (project / "data" / "prepared").exists()


def test_test_questions_seen_in_train_or_dev_are_counted(tmp_path: Path) -> None:
    """MedQA has no ids: leakage is found by content (issue 15, item 9); prepare warns and reports it."""
    root = _medqa_dir({}, tmp_path / "medqa")  # the same six questions in every split: all leak
    records = load_records(DataConfig(source="medqa", medqa_path=str(root), medqa_files="{split}.jsonl"))
    test_ids = [r.record_id for r in records if r.split == "test"]
    assert leakage(records) == {
        "test_in_train": 6,
        "test_in_dev": 6,
        "n_test_leaked": 6,
        "leaked_test_ids": sorted(test_ids),
    }
    disguised = [
        replace(r, question="\u200b " + r.question.upper()) if r.split == "train" else r for r in records
    ]
    assert leakage([r for r in disguised if r.split != "dev"])["test_in_train"] == 6
    fresh = [
        replace(r, question=f"{r.question} Case {i}.") if r.split == "test" else r
        for i, r in enumerate(records)
    ]
    assert leakage(fresh) == {"test_in_train": 0, "test_in_dev": 0, "n_test_leaked": 0, "leaked_test_ids": []}
