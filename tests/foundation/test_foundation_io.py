"""Artifact I/O: atomic writes, provenance checks, corrupt-file detection."""

from __future__ import annotations

import json
import os
import stat

import pandas as pd
import pytest

from xurs_pipeline.io import (
    ArtifactError,
    Provenance,
    atomic_path,
    config_hash,
    read_json,
    read_parquet,
    read_provenance,
    write_json,
    write_parquet,
)

PROV = Provenance("demo", 1, "abc123")


def test_parquet_round_trip_keeps_lists_and_provenance(tmp_path):
    frame = pd.DataFrame({"record_id": ["a", "b"], "ids": [[1, 2, 3], [4]], "x": [0.5, 1.5]})
    path = write_parquet(frame, tmp_path / "out.parquet", PROV)
    back = read_parquet(path, expected=PROV, required_columns=["record_id"])
    assert back["record_id"].tolist() == ["a", "b"]
    assert [list(v) for v in back["ids"]] == [[1, 2, 3], [4]]
    assert read_provenance(path) == PROV


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        (Provenance("other", 1, "abc123"), "schema 'demo' v1, expected 'other' v1"),
        (Provenance("demo", 2, "abc123"), "expected 'demo' v2"),
        (Provenance("demo", 1, "fff"), "config hash abc123"),
    ],
)
def test_read_refuses_other_schema_or_config(tmp_path, expected, message):
    path = write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "x.parquet", PROV)
    with pytest.raises(ArtifactError, match=message):
        read_parquet(path, expected=expected)


def test_truncated_parquet_is_detected(tmp_path):
    path = write_parquet(pd.DataFrame({"a": list(range(100))}), tmp_path / "x.parquet", PROV)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="corrupt or truncated"):
        read_parquet(path)


def test_missing_artifact_names_path(tmp_path):
    with pytest.raises(ArtifactError, match=r"nope\.parquet: missing artifact"):
        read_parquet(tmp_path / "nope.parquet")


def test_required_columns_enforced_on_write_and_read(tmp_path):
    with pytest.raises(ArtifactError, match=r"missing columns \['b'\]"):
        write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "x.parquet", PROV, required_columns=["a", "b"])
    assert not (tmp_path / "x.parquet").exists()
    path = write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "x.parquet", PROV)
    with pytest.raises(ArtifactError, match="missing columns"):
        read_parquet(path, required_columns=["b"])


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    def interrupted_write() -> None:
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        interrupted_write()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_written_files_and_directories_get_the_ordinary_mode_not_0600(tmp_path):
    from xurs_pipeline.models.atomic_dir import atomic_directory

    old = os.umask(0o022)
    try:
        write_json({"a": 1}, tmp_path / "m.json", PROV)
        with atomic_directory(tmp_path / "d") as tmp:
            (tmp / "x").write_text("x")
        os.umask(0o077)  # a stricter umask is honoured, not overridden
        write_json({"a": 1}, tmp_path / "private.json", PROV)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600


def test_json_round_trip_and_corruption(tmp_path):
    path = write_json({"b": 2, "a": [1.0, 2.0]}, tmp_path / "m.json", PROV)
    assert read_json(path, expected=PROV)["a"] == [1.0, 2.0]
    path.write_text(path.read_text()[:10])
    with pytest.raises(ArtifactError, match="corrupt or truncated JSON"):
        read_json(path)


def test_json_refuses_nan(tmp_path):
    with pytest.raises(ValueError, match="JSON compliant"):
        write_json({"x": float("nan")}, tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


def test_config_hash_is_order_independent_and_sensitive():
    assert config_hash({"a": 1, "b": {"c": 2}}) == config_hash({"b": {"c": 2}, "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    assert len(config_hash(json.loads("{}"))) == 16
