"""`xurs params experiment=paper_smollm3|paper_llama2` compose to the paper's settings (issue 17):
global batch 32 (Table 4), MedQA's own train split (Sec. 5.1) and a LoRA head warm-started from the
head-only model (App. B.1); local MedQA runs carve, and say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from xurs_pipeline.config import compose, validate
from xurs_pipeline.data.medqa import split_deviation
from xurs_pipeline.train.config import accumulation_steps

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.mark.parametrize("experiment", ["paper_smollm3", "paper_llama2"])
def test_paper_experiments_compose_to_the_papers_settings(experiment: str):
    cfg = validate(compose([f"experiment={experiment}"], conf_dir=CONF), source=experiment)
    assert cfg.train.global_batch == 32
    assert accumulation_steps(cfg.train.global_batch, cfg.train.batch_size, 1) == 32  # one process
    assert (cfg.data.source, cfg.data.medqa_carve) == ("medqa", "")
    assert split_deviation(cfg.data.source, cfg.data.medqa_carve, cfg.data.medqa_train_fraction) == ""
    assert (cfg.train.adaptation, cfg.train.head_first) == ("lora", True)  # head from the train_head stage


def test_the_local_medqa_experiment_carves_and_states_it():
    cfg = validate(compose(["experiment=medqa_local"], conf_dir=CONF), source="medqa_local")
    assert cfg.data.medqa_carve == "dev"
    assert split_deviation(cfg.data.source, cfg.data.medqa_carve, cfg.data.medqa_train_fraction)
