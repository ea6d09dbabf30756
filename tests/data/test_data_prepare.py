"""The whole preparation: artifacts honour the prompts contract; the summary agrees with the table."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from xurs_pipeline.config import PathsConfig, RootConfig
from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset
from xurs_pipeline.data.schema import (
    CONTENT_SECTIONS,
    PROMPT_COLUMNS,
    SECTION_NAMES,
    SYNTHETIC_COLUMNS,
    TOKEN_COLUMNS,
    read_prompts,
)
from xurs_pipeline.io import ArtifactError, read_json
from xurs_pipeline.tasks import prepare as prepare_task

SMOKE = DataConfig(source="synthetic_v1", families=[4, 1, 1], cases_per_family=3)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke_prepared(tiny_tokenizer, tmp_path_factory):
    out = tmp_path_factory.mktemp("prepared")
    summary = prepare_dataset(SMOKE, tiny_tokenizer, out, data_config_hash(SMOKE))
    return out, summary


def check_contract(frame, tokenizer) -> None:
    assert frame["record_id"].is_unique
    for row in frame.itertuples():
        n = len(row.input_ids)
        assert all(len(getattr(row, c)) == n for c in TOKEN_COLUMNS)
        assert list(row.input_ids) == tokenizer(row.prompt)["input_ids"]
        assert set(row.sections) <= set(SECTION_NAMES)
        for start, end, section, ok in zip(
            row.token_start, row.token_end, row.sections, row.eligible, strict=True
        ):
            if section == "special":
                assert (start, end) == (0, 0)
            if ok:
                assert section in CONTENT_SECTIONS
                assert any(c.isalnum() for c in row.prompt[start:end])


def test_smoke_synthetic_artifacts(smoke_prepared, tiny_tokenizer):
    out, summary = smoke_prepared
    frame = read_prompts(out / "prompts.parquet", config_hash=data_config_hash(SMOKE))
    assert list(frame.columns) == [*PROMPT_COLUMNS, *SYNTHETIC_COLUMNS]
    assert frame["split"].value_counts().to_dict() == {"train": 24, "dev": 6, "test": 6}
    check_contract(frame, tiny_tokenizer)
    for row in frame.itertuples():
        assert set(row.clue_positions) <= set(row.case_positions)
        assert (len(row.clue_positions) >= 5) if row.has_result else (len(row.clue_positions) == 0)  # V1
        clue_text = "".join(row.prompt[row.token_start[i] : row.token_end[i]] for i in row.clue_positions)
        assert ("positive" in clue_text) == row.has_result
        assert {row.sections[i] for i in row.case_positions} == {"question"}
        assert np.isclose(sum(row.target_masses), 1.0)
    on_disk = read_json(out / "summary.json")
    assert on_disk["splits"] == summary["splits"] == {"train": 24, "dev": 6, "test": 6}
    fractions = [np.mean(e) for e in frame["eligible"]]
    assert on_disk["eligible_fraction"]["mean"] == pytest.approx(np.mean(fractions))
    assert on_disk["eligible_fraction"]["min"] == pytest.approx(min(fractions))
    assert len(on_disk["known_flaws"]) == 2
    assert on_disk["validators"]["reader"]["n_rejected"] == 0
    assert on_disk["validators"]["pairs"]["n_same_length"] == 0  # V1 adds a sentence to each resolved prompt
    assert on_disk["validators"]["shortcuts"]["test_order"]["train"] == 1.0


def test_provenance_mismatch_is_refused(smoke_prepared):
    out, _ = smoke_prepared
    other = dataclasses.replace(SMOKE, seed=1)
    with pytest.raises(ArtifactError, match="config hash"):
        read_prompts(out / "prompts.parquet", config_hash=data_config_hash(other))


def test_medqa_fixture_prepares_without_synthetic_columns(medqa_dir, tiny_tokenizer, tmp_path):
    data = DataConfig(source="medqa", medqa_path=str(medqa_dir), medqa_carve="dev", medqa_train_fraction=0.75)
    summary = prepare_dataset(data, tiny_tokenizer, tmp_path)
    frame = read_prompts(tmp_path / "prompts.parquet")
    assert list(frame.columns) == list(PROMPT_COLUMNS)
    check_contract(frame, tiny_tokenizer)
    assert summary["splits"] == {"train": 9, "dev": 3, "test": 3}
    assert "validators" not in summary
    assert summary["n_truncated"] == 0


def test_failed_summary_write_leaves_no_table(tiny_tokenizer, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("xurs_pipeline.data.dataset.write_json", refuse)
    with pytest.raises(OSError, match="disk full"):
        prepare_dataset(SMOKE, tiny_tokenizer, tmp_path / "prepared")
    assert list((tmp_path / "prepared").glob("*")) == []


def test_stage_body_reads_the_backbone_tokenizer(tiny_tokenizer, tmp_path):
    cfg = RootConfig(paths=PathsConfig(artifacts=str(tmp_path)), data=SMOKE)
    with pytest.raises(ArtifactError, match="no tokenizer in"):
        prepare_task.run(cfg)  # no backbone yet
    assert not (tmp_path / "prepared").exists()
    tiny_tokenizer.save_pretrained(str(tmp_path / "backbone"))
    prepare_task.run(cfg)
    frame = read_prompts(tmp_path / "prepared" / "prompts.parquet", config_hash=data_config_hash(SMOKE))
    assert len(frame) == 36
    assert read_json(tmp_path / "prepared" / "summary.json")["n_records"] == 36
