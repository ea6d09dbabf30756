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


@pytest.mark.parametrize(
    ("experiment", "source", "head"),
    [("controlled_v1_paper", "synthetic_v1", "linear"), ("controlled_v2_paper", "synthetic_v2", "mlp")],
)
def test_controlled_experiments_with_the_papers_model(experiment: str, source: str, head: str):
    """Sec. 5.4 / App. D: a softmax over the 15 sets on frozen SmolLM3-3B, 100 epochs (Tables 3 and 9)."""
    cfg = validate(compose([f"experiment={experiment}"], conf_dir=CONF), source=experiment)
    assert (cfg.data.source, cfg.model.source) == (source, "HuggingFaceTB/SmolLM3-3B")
    assert (cfg.model.output_kind, cfg.model.head, cfg.train.adaptation) == ("mass15", head, "head_only")
    assert cfg.train.max_epochs == 100
    assert cfg.train.patience >= cfg.train.max_epochs  # the whole schedule runs
    if experiment == "controlled_v1_paper":  # Table 3 and 9: FP32 IG with aligned paired references
        assert (cfg.attribution.method, cfg.attribution.reference, cfg.attribution.precision) == (
            "ig", "aligned", "float32"
        )
    else:
        assert cfg.model.head_hidden == 128
