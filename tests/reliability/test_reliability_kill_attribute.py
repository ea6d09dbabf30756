"""SIGKILL the ``attribute`` stage at several points; rerunning finishes with the uninterrupted result.

One chain of runs on a copy of the reference project (same classifier and prompts):
1. killed between questions, at a moment chosen by polling for the first committed part;
2. killed while a question's part file is half written (its coordinates are already on disk);
3. killed while the merged ``attributions.parquet`` is half written;
4. run to the end.
After each kill nothing half-written is readable as an artifact; at the end the outputs equal the
reference bit for bit, every question appears once, and finished questions were never recomputed.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from reliability_proc import Hook, StageProcess, killed_at, run_ok
from reliability_project import assert_same_attribute, copy_project

from xurs_pipeline.attribution.store import PartStore
from xurs_pipeline.evaluation.artifacts import read_attributions
from xurs_pipeline.io import ArtifactError, read_json, read_parquet, read_provenance

PARQUET_WRITE = "pyarrow.parquet:write_table"  # io.write_parquet writes the temporary file with it


def _committed(parts: Path) -> set[str]:
    return {p.name for p in parts.glob("*.parquet")}


def _temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


def test_attribute_survives_kills_at_several_points(reference: Path, tmp_path: Path) -> None:
    project = copy_project(reference, tmp_path / "project", "backbone", "prepare", "train")
    out, expected = project / "data" / "attribute", reference / "data" / "attribute"
    parts = out / "parts"
    questions = sorted(read_parquet(expected / "attributions.parquet")["record_id"])
    assert len(questions) == len(set(questions)) == 4

    # 1. A slowed run (0.5 s after each committed question) killed as soon as a part appears.
    slow = StageProcess(
        project,
        "attribute",
        hooks=[Hook("xurs_pipeline.attribution.store:PartStore.write", action="delay", seconds=0.5)],
    ).start()
    try:
        slow.wait_for(lambda: bool(_committed(parts)), "a committed part")
    finally:
        slow.kill()
    assert slow.process.exitcode == -signal.SIGKILL
    first = _committed(parts)
    assert 1 <= len(first) < 4
    assert not (out / "attributions.parquet").exists()

    # 2. Killed with the next question's part half written under a temporary name.
    killed_at(project, "attribute", Hook(PARQUET_WRITE, action="truncate_pause", match=r"/parts/\."))
    half = _temporaries(parts)
    assert len(half) == 1
    with pytest.raises(ArtifactError, match="corrupt or truncated Parquet"):
        read_parquet(half[0])
    assert _committed(parts) == first  # the half-written question does not count as finished
    store = PartStore(out, read_provenance(parts / sorted(first)[0]).config_hash)
    assert sum(store.done(q) for q in questions) == len(first)

    # 3. Killed while merging: every question is committed, the final table is half written.
    killed_at(
        project, "attribute", Hook(PARQUET_WRITE, action="truncate_pause", match=r"\.attributions\.parquet\.")
    )
    assert len(_committed(parts)) == 4
    assert not (out / "attributions.parquet").exists()
    with pytest.raises(ArtifactError, match="missing artifact"):
        read_attributions(out)  # what the next stage reads: refused, not read as complete
    with pytest.raises(ArtifactError, match="corrupt or truncated Parquet"):
        read_parquet(_temporaries(out)[0])

    # 4. The last run only merges, and the result is the uninterrupted one, bit for bit.
    run_ok(project, "attribute")
    shard = read_json(parts / "shard-0-of-1.json")
    assert shard["computed"] == []
    assert sorted(shard["skipped"]) == questions
    assert_same_attribute(out, expected)
    table = read_parquet(out / "attributions.parquet")
    assert sorted(table["record_id"]) == questions  # no question missing or duplicated
    assert not list((out / "coords").glob(".*"))  # no stray temporary among the outputs
