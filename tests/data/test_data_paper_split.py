"""MedQA's own split for the paper experiments (Sec. 5.1); a carved split is a stated deviation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from xurs_pipeline.data.medqa import load_medqa_dir, split_deviation
from xurs_pipeline.data.records import DataError
from xurs_pipeline.reporting.render import Column, TableSpec, write_table


def test_without_the_train_file_loading_names_the_file_and_how_to_carve(medqa_dir: Path):
    train = medqa_dir / "US" / "4_options" / "phrases_no_exclude_train.jsonl"
    with pytest.raises(DataError) as err:
        load_medqa_dir(medqa_dir, carve="")
    assert str(train) in str(err.value)
    assert "data.medqa_carve=dev" in str(err.value)
    records = load_medqa_dir(medqa_dir, carve="dev")  # the route the message names works
    assert {r.split for r in records} == {"train", "dev", "test"}


def test_only_a_carved_medqa_split_is_a_deviation():
    assert split_deviation("medqa", "", 0.8) == ""
    assert split_deviation("synthetic_v1", "dev", 0.8) == ""
    carved = split_deviation("medqa", "dev", 0.8)
    assert "train split carved from the dev file" in carved and "0.8" in carved
    assert "dev split carved from the train file" in split_deviation("medqa", "train", 0.75)


def test_a_table_footer_states_the_note_in_every_format(tmp_path: Path):
    spec = TableSpec("t_demo", "DemoRows", "demo", [Column("x", "x")])
    note = split_deviation("medqa", "dev", 0.8)
    md, tex, csv = write_table(pd.DataFrame({"x": [1]}), spec, tmp_path, "medqa_local", "abc", note)
    assert note in md.read_text() and note in tex.read_text()
    assert pd.read_csv(csv)["note"].tolist() == [note]
    md, tex, csv = write_table(pd.DataFrame({"x": [1]}), spec, tmp_path, "paper_smollm3", "abc")
    assert "carved" not in md.read_text() and "note" not in pd.read_csv(csv).columns
