"""MedQA loading (Sec. 5.1): splits, the seeded carve, the hub form, and every bad-input case."""

from __future__ import annotations

import copy
import sys
import types
from pathlib import Path

import pytest
import yaml
from data_helpers import MEDQA_ROWS, write_jsonl

from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import prepare_dataset
from xurs_pipeline.data.medqa import load_medqa_dir, load_medqa_hub
from xurs_pipeline.data.records import DataError

ROOT = Path(__file__).resolve().parents[2]

REAL_MEDQA = Path(__file__).resolve().parents[3] / "shared" / "data" / "medqa"
DEV = "phrases_no_exclude_dev.jsonl"


def test_local_dir_with_carved_train(medqa_dir):
    records = load_medqa_dir(medqa_dir, carve="dev", train_fraction=0.75, seed=0)
    by_split = {s: [r for r in records if r.split == s] for s in ("train", "dev", "test")}
    assert [len(v) for v in by_split.values()] == [9, 3, 3]  # 12 dev rows -> 9 train + 3 dev
    train_ids = {r.record_id for r in by_split["train"]}
    assert train_ids.isdisjoint(r.record_id for r in by_split["dev"])
    assert all(i.startswith("medqa-dev-") for i in train_ids)  # ids say which file and line
    first = by_split["test"][0]
    assert (first.record_id, first.answer_idx, first.options[2]) == ("medqa-test-00001", 2, "Ceftriaxone")
    assert records == load_medqa_dir(medqa_dir, carve="dev", train_fraction=0.75, seed=0)  # deterministic
    other = load_medqa_dir(medqa_dir, carve="dev", train_fraction=0.75, seed=1)
    assert {r.record_id for r in other if r.split == "train"} != train_ids
    dev_lines = [int(r.record_id[-5:]) for r in by_split["train"]]
    assert dev_lines == sorted(dev_lines), "file order kept within a carved split"


def medqa_config(root: Path, carve: str = "dev") -> DataConfig:
    return DataConfig(source="medqa", medqa_path=str(root), medqa_carve=carve, medqa_train_fraction=0.75)


def rows_with(index: int, **change) -> list[object]:
    rows = copy.deepcopy(MEDQA_ROWS)
    rows[index].update(change)
    return rows


def without_option_d() -> list[object]:
    rows = copy.deepcopy(MEDQA_ROWS)
    del rows[1]["options"]["D"]
    return rows


BAD_DEV_FILES = {
    "malformed line": (
        [MEDQA_ROWS[0], MEDQA_ROWS[1], '{"question": "cut off', MEDQA_ROWS[2]],
        r":3: malformed JSON",
    ),
    "missing option": (
        without_option_d(),
        r":2: options must have exactly the keys A, B, C, D.*missing \['D'\]",
    ),
    "answer_idx E": (rows_with(1, answer_idx="E"), r":2: answer_idx 'E' must be one of 'A', 'B', 'C', 'D'"),
    "empty question": (rows_with(0, question="   "), r":1: empty or missing question"),
    "duplicate id": (
        [dict(MEDQA_ROWS[0], id="q1"), dict(MEDQA_ROWS[1], id="q1")],
        r":2: duplicate record id 'q1' \(first seen at .*:1\)",
    ),
    "answer text mismatch": (
        rows_with(0, answer="Gentamicin"),
        r":1: answer 'Gentamicin' is not the text of option C",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_DEV_FILES))
def test_bad_input_names_file_and_line_and_writes_nothing(case, medqa_dir, tmp_path, tiny_tokenizer):
    rows, pattern = BAD_DEV_FILES[case]
    write_jsonl(medqa_dir / "US" / "4_options" / DEV, rows)
    out = tmp_path / "prepared"
    with pytest.raises(DataError, match=f"{DEV}{pattern}"):
        prepare_dataset(medqa_config(medqa_dir), tiny_tokenizer, out)
    assert not out.exists()


def test_missing_split_is_named_and_writes_nothing(medqa_dir, tmp_path, tiny_tokenizer):
    out = tmp_path / "prepared"
    with pytest.raises(
        DataError, match=r"split\(s\) \['train'\] not found at .*phrases_no_exclude_\{split\}"
    ):
        prepare_dataset(medqa_config(medqa_dir, carve=""), tiny_tokenizer, out)
    (medqa_dir / "US" / "4_options" / "phrases_no_exclude_test.jsonl").unlink()
    with pytest.raises(DataError, match=r"split\(s\) \['test'\] not found"):
        prepare_dataset(medqa_config(medqa_dir), tiny_tokenizer, out)
    write_jsonl(medqa_dir / "US" / "4_options" / "phrases_no_exclude_test.jsonl", [])
    with pytest.raises(DataError, match=r"phrases_no_exclude_test\.jsonl: no records"):
        prepare_dataset(medqa_config(medqa_dir), tiny_tokenizer, out)
    with pytest.raises(DataError, match=r"data\.medqa_path=.*nowhere.*no such directory"):
        prepare_dataset(medqa_config(tmp_path / "nowhere"), tiny_tokenizer, out)
    assert not out.exists()


def test_duplicate_ids_across_files(medqa_dir):
    files = medqa_dir / "US" / "4_options"
    write_jsonl(files / DEV, [dict(MEDQA_ROWS[0], id="same")])
    write_jsonl(files / "phrases_no_exclude_test.jsonl", [dict(MEDQA_ROWS[1], id="same")])
    with pytest.raises(
        DataError, match=r"phrases_no_exclude_test\.jsonl:1: duplicate record id 'same'.*dev\.jsonl:1"
    ):
        load_medqa_dir(medqa_dir, carve="dev", train_fraction=0.5)


def test_carve_refuses_to_overwrite_an_existing_train_split(medqa_dir):
    write_jsonl(medqa_dir / "US" / "4_options" / "phrases_no_exclude_train.jsonl", MEDQA_ROWS)
    with pytest.raises(DataError, match=r"already has one; set data\.medqa_carve=''"):
        load_medqa_dir(medqa_dir, carve="dev")
    assert len(load_medqa_dir(medqa_dir)) == 3 + 12 + 3


def fake_datasets(splits: dict[str, list[dict]]) -> types.ModuleType:
    module = types.ModuleType("datasets")
    module.get_dataset_split_names = lambda name: list(splits)
    module.load_dataset = lambda name, split: splits[split]
    return module


def test_hub_form_with_train_and_test_only(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", fake_datasets({"train": MEDQA_ROWS * 4, "test": MEDQA_ROWS}))
    records = load_medqa_hub("GBaker/MedQA-USMLE-4-options", carve="train", train_fraction=0.5)
    assert [sum(r.split == s for r in records) for s in ("train", "dev", "test")] == [6, 6, 3]
    broken = {"train": [MEDQA_ROWS[0], dict(MEDQA_ROWS[1], answer_idx="Z")], "test": MEDQA_ROWS}
    monkeypatch.setitem(sys.modules, "datasets", fake_datasets(broken))
    with pytest.raises(DataError, match=r"org/medqa\[train\] row 2: answer_idx 'Z'"):
        load_medqa_hub("org/medqa", carve="train")


@pytest.mark.skipif(not REAL_MEDQA.is_dir(), reason=f"real MedQA copy not found at {REAL_MEDQA}")
def test_real_medqa_files_load_with_expected_counts():
    records = load_medqa_dir(REAL_MEDQA, carve="dev", train_fraction=0.8, seed=0)
    counts = [sum(r.split == s for r in records) for s in ("train", "dev", "test")]
    assert counts == [1018, 254, 1273]  # 1,272 dev questions carved 80/20; 1,273 test
    assert len({r.record_id for r in records}) == 2545


def test_a_missing_medqa_copy_stops_the_check_stage_in_one_line_naming_the_key(tmp_path, monkeypatch, capsys):
    """The default data.medqa_path is inside the project (data/medqa); the first stage (check) refuses a
    local MedQA config whose directory or files are missing, naming the key, before any stage runs."""
    from xurs_pipeline.config import compose
    from xurs_pipeline.data.medqa import require_medqa_dir
    from xurs_pipeline.tasks import check

    assert DataConfig().medqa_path == "data/medqa"
    monkeypatch.chdir(tmp_path)
    composed = compose(["experiment=medqa_local"], conf_dir=ROOT / "conf")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(composed))
    assert check.main() == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("check: data.medqa_path='data/medqa': no such directory")
    assert not (tmp_path / "data" / "check.json").exists()
    (tmp_path / "data" / "medqa").mkdir(parents=True)
    with pytest.raises(DataError, match=r"^data\.medqa_files='\{split\}\.jsonl': no such file for any split"):
        require_medqa_dir(tmp_path / "data" / "medqa", "{split}.jsonl")
    write_jsonl(tmp_path / "data" / "medqa" / "dev.jsonl", MEDQA_ROWS)
    assert require_medqa_dir(tmp_path / "data" / "medqa", "{split}.jsonl") == tmp_path / "data" / "medqa"
