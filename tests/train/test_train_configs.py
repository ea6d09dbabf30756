"""Every conf/train option validates; the LoRA options carry Table 4's settings; bad values name keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from xurs_pipeline.train.config import BatchSplitError, TrainConfig, accumulation_steps

CONF = Path(__file__).resolve().parents[2] / "conf"
OPTIONS = sorted(p.stem for p in (CONF / "train").glob("*.yaml"))
PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def load_train_option(name: str) -> TrainConfig:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        raw = compose(config_name=f"train/{name}").train
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TrainConfig), raw))  # type: ignore[return-value]


def test_the_train_options_exist() -> None:
    assert OPTIONS == [
        "default",
        "head_only",
        "lora_llama2",
        "lora_smollm3",
        "partial",
        "partial_cpu",
        "smoke",
    ]


@pytest.mark.parametrize("name", OPTIONS)
def test_train_option_validates_and_its_global_batch_runs_in_one_process(name: str) -> None:
    cfg = load_train_option(name)  # the spec ``fit`` takes
    assert accumulation_steps(cfg.global_batch, cfg.batch_size, 1) >= 1  # raises when it does not divide
    assert cfg.max_grad_norm == 1.0
    assert cfg.set_loss_weight == 0.1
    assert cfg.select_by == "answer_nll"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("lora_smollm3", dict(lora_rank=16, lora_alpha=32.0, lora_dropout=0.05, lr_adapter=1e-4, lr_head=5e-5,
                              weight_decay=0.01, warmup_fraction=0.1, max_epochs=5, patience=2, seed=7)),
        ("lora_llama2", dict(lora_rank=8, lora_alpha=16.0, lora_dropout=0.05, lr_adapter=1e-4, lr_head=1e-4,
                             weight_decay=0.1, warmup_fraction=0.05, max_epochs=5, patience=3, seed=7)),
    ],
)  # fmt: skip
def test_lora_options_match_table_4(name: str, expected: dict) -> None:
    cfg = load_train_option(name)
    assert {k: getattr(cfg, k) for k in expected} == expected
    assert cfg.adaptation == "lora"
    assert cfg.lora_targets == PROJECTIONS
    assert cfg.global_batch == 32  # Table 4: 8 workers x 1 example x 4 accumulated batches
    assert accumulation_steps(cfg.global_batch, cfg.batch_size, 8) == 4  # the paper's 8 workers
    assert accumulation_steps(cfg.global_batch, cfg.batch_size, 1) == 32  # one process (dvc repro)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"lr_head": -1.0}, r"train\.lr_head=-1\.0: must be positive"),
        ({"adaptation": "full"}, r"train\.adaptation='full'"),
        ({"warmup_fraction": 1.0}, r"train\.warmup_fraction=1\.0"),
        ({"global_batch": 0}, r"train\.global_batch=0"),
        ({"head_first": True}, r"train\.head_first=true: only adaptation lora or partial"),
        ({"head_first": True, "adaptation": "lora", "init_head_from": "x"}, r"choose one warm start"),
        ({"head_first_epochs": 0}, r"train\.head_first_epochs=0"),
        ({"patience": -1}, r"train\.patience=-1"),
        ({"lora_targets": []}, r"train\.lora_targets=\[\]"),
        ({"predict_splits": ["val"]}, r"train\.predict_splits=\['val'\]"),
        ({"mixed_precision": "fp8"}, r"train\.mixed_precision='fp8'"),
    ],
)
def test_bad_train_values_name_the_key(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**changes)


@pytest.mark.parametrize(
    ("global_batch", "batch_size", "processes", "steps"),
    [(32, 1, 8, 4), (32, 1, 1, 32), (32, 4, 2, 4), (8, 8, 1, 1)],
)
def test_accumulation_keeps_the_global_batch(global_batch: int, batch_size: int, processes: int, steps: int):
    assert accumulation_steps(global_batch, batch_size, processes) == steps
    assert batch_size * processes * steps == global_batch


def test_a_global_batch_the_processes_cannot_split_names_the_key():
    with pytest.raises(BatchSplitError, match=r"train\.batch_size=3 does not divide train\.global_batch=32"):
        accumulation_steps(32, 3, 1)
    with pytest.raises(BatchSplitError, match=r"train\.batch_size=1 x 3 processes .* train\.global_batch=32"):
        accumulation_steps(32, 1, 3)
    # the one-process case is part of the config check (``xurs check``, the first DVC stage)
    with pytest.raises(ValueError, match=r"train\.batch_size=3 does not divide train\.global_batch=32"):
        TrainConfig(batch_size=3, global_batch=32)
