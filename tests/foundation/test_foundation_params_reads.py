"""The recorder of the params each stage reads (tests/params_reads.py), which the in-process pipeline runs
use to check every stage lists what it reads: it must see a read, and see nothing else."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from pathlib import Path

import yaml
from params_reads import Reads, recording, unlisted_reads

from xurs_pipeline.config import validate
from xurs_pipeline.contracts import data_keys
from xurs_pipeline.tasks.runner import run_task

ROOT = Path(__file__).resolve().parents[2]
CFG = validate(yaml.safe_load((ROOT / "params.yaml").read_text()))
COMPOSED = asdict(CFG)


def _reads(stage: str, task) -> Reads:  # type: ignore[no-untyped-def]
    reads: Reads = {}
    run_task(stage, task, recording(CFG, reads))
    return reads


def test_a_key_a_stage_reads_but_does_not_list_is_reported() -> None:
    def task(cfg):  # type: ignore[no-untyped-def]
        _ = cfg.data.medqa_path  # no key of synthetic prompts, nor of swap's own

    reads = _reads("swap", task)
    assert reads == {"swap": {"data.medqa_path"}}
    assert unlisted_reads(reads, COMPOSED) == {"swap": ["data.medqa_path"]}


def test_keys_listed_by_the_stage_or_a_writer_of_what_it_reads_pass() -> None:
    def task(cfg):  # type: ignore[no-untyped-def]
        _ = cfg.evaluation.swap_methods, cfg.attribution.n_samples  # swap's own keys
        _ = cfg.data.families, cfg.train.lr_head  # prepare's and train's (their outputs are its inputs)
        _ = cfg.paths.artifacts  # dvc.yaml's paths are templated from paths.*

    reads = _reads("swap", task)
    assert reads["swap"] == {
        "evaluation.swap_methods",
        "attribution.n_samples",
        "data.families",
        "train.lr_head",
        "paths.artifacts",
    }
    assert unlisted_reads(reads, COMPOSED) == {}
    assert unlisted_reads({"gates": {"train.lr_head"}}, COMPOSED) == {"gates": ["train.lr_head"]}
    backbone = {"backbone": {"train.lr_head"}}  # it reads check.json, but check's output never changes
    assert unlisted_reads(backbone, COMPOSED) == {"backbone": ["train.lr_head"]}


def test_copying_and_validating_read_nothing_and_hashing_a_section_reads_all_of_it() -> None:
    def task(cfg):  # type: ignore[no-untyped-def]
        dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, seed=3))  # a copy, validated again
        asdict(cfg.data)

    reads = _reads("train", task)
    assert reads == {"train": {f"data.{f.name}" for f in dataclasses.fields(CFG.data)}}
    assert "data.medqa_path" in unlisted_reads(reads, COMPOSED)["train"]  # a synthetic prompts' hash lacks it
    assert not set(unlisted_reads(reads, COMPOSED)["train"]) & {f"data.{k}" for k in data_keys("synthetic")}
