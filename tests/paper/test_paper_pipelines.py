"""The paper's experiments end to end on tiny random models of the paper's architectures (SmolLM3, Llama-2)
loaded from local directories, with every paper setting except the sizes.

Each run is `xurs params` and then every stage's task to ``tables`` in this process (``run_pipeline``: the
outputs of ``dvc repro`` without an interpreter start per stage, which is 95% of a tiny run's time;
tests/pipeline/test_pipeline_in_process.py checks the two agree), with each stage's declared inputs checked
against the generated ``dvc.yaml`` as ``python -m stages <name>`` checks them. Table 8's sweep (``xurs sweep
--stage predict``) runs through DVC in tests/foundation/test_foundation_experiments.py.

Kept from the paper (checked against the unshrunk composition): LoRA on q/k/v/o/gate/up/down with the
paper's ranks, the head-only warm start (``train_head``), global batch 32 (32 accumulation steps of batch 1
in one process), bf16 mixed precision in training, FP16 (SmolLM3) and BF16 (Llama-2) attribution with
collections averaged in FP32, the Llama run's three hash-ordered collections, the repeated runs (seeds 17
and 23) and Table 6's verdicts. Shrunk: layers and hidden size, MedQA size (synthetic questions in its
format), epochs, questions, references and samples, bootstrap resamples, random positions, and the
model-randomisation check (0 questions). On this CPU FP16 is emulated; at hidden size 64 it is fast enough
to keep the paper's FP16 here.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
import yaml
from paper_helpers import BIN, ROOT, run, scratch_project
from params_reads import Reads, recording, unlisted_reads

from xurs_pipeline.config import compose, load_params
from xurs_pipeline.contracts import STAGES
from xurs_pipeline.experiments.show import flatten  # dotted keys of a nested config
from xurs_pipeline.models.tiny_paper import ARCHITECTURE, sized_overrides
from xurs_pipeline.tasks.pipeline import run_pipeline
from xurs_pipeline.tasks.runner import check_declared_inputs

PAPER_SETTINGS = (
    "train.lora_targets",
    "train.lora_rank",
    "train.mixed_precision",
    "train.global_batch",
    "train.batch_size",
    "train.head_first",
    "attribution.precision",
    "attribution.samples_per_call",
    "attribution.n_collections",
    "attribution.reference_order",
    "evaluation.repeat_seeds",
    "evaluation.ranking.median_section_spearman_min",
)
TO_TABLES = list(STAGES)[: list(STAGES).index("tables") + 1]


@pytest.fixture(scope="module", params=["paper_smollm3", "paper_llama2"])
def paper_run(request: pytest.FixtureRequest, paper_models: dict[str, Path], tmp_path_factory) -> Path:
    """A scratch project where the experiment ran to ``tables`` on its tiny model (module docstring)."""
    experiment = request.param
    work = scratch_project(tmp_path_factory.mktemp(experiment))
    run([str(BIN / "dvc"), "init", "--no-scm", "-q"], work)
    run(
        [str(BIN / "xurs"), "params", *sized_overrides(experiment, paper_models[ARCHITECTURE[experiment]])],
        work,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        for stage in TO_TABLES:
            check_declared_inputs(stage, work)
        reads: Reads = {}
        cfg = load_params("params.yaml")
        run_pipeline(recording(cfg, reads), until="tables")
    (work / "params_read.json").write_text(json.dumps(unlisted_reads(reads, asdict(cfg))))
    return work


@pytest.mark.slow
def test_every_stage_lists_the_params_it_reads(paper_run: Path) -> None:
    """Issue 56: each stage's task, run on the paper settings (LoRA, head warm start, repeats, comparison
    targets), reads no params key that neither it nor a writer of what it reads lists in dvc.yaml
    (tests/params_reads.py)."""
    assert json.loads((paper_run / "params_read.json").read_text()) == {}


@pytest.mark.slow
def test_only_sizes_differ_from_the_paper_configs(paper_models: dict[str, Path]) -> None:
    for experiment, arch in ARCHITECTURE.items():
        paper = flatten(compose([f"experiment={experiment}"], conf_dir=ROOT / "conf"))
        sized = flatten(compose(sized_overrides(experiment, paper_models[arch]), conf_dir=ROOT / "conf"))
        changed = {key for key in paper if paper[key] != sized[key]}
        named = {o.split("=")[0] for o in sized_overrides(experiment, paper_models[arch])[1:]}
        assert changed <= named, changed - named
        assert not changed & set(PAPER_SETTINGS)
        assert sized["train.adaptation"] == "lora"
        assert sized["train.mixed_precision"] == "bf16"


@pytest.mark.slow
def test_paper_experiment_writes_table1_with_the_paper_settings(paper_run: Path) -> None:
    params = yaml.safe_load((paper_run / "params.yaml").read_text())
    experiment = params["experiment_name"]
    effects = pd.read_csv(paper_run / "results/tables/table1_effects.csv")
    assert effects["target_fn"].tolist() == ["width"]
    assert effects["questions"].tolist() == [2]
    assert "lora" in effects["configuration"].iloc[0]
    precision = {"paper_smollm3": "float16", "paper_llama2": "bfloat16"}[experiment]
    assert f"eg ({precision})" in effects["budget"].iloc[0]
    metrics = json.loads((paper_run / "data/train/train_metrics.json").read_text())
    assert metrics["adaptation"] == "lora"
    assert metrics["global_batch"] == 32
    assert metrics["grad_accum"] == 32
    assert metrics["init_head_from"] == "data/train_head/classifier"  # App. B.1 warm start
    assert metrics["optimizer_steps"] == 1  # 32 training questions, one epoch, global batch 32
    assert (paper_run / "data/train/classifier/adapter").is_dir()
    verdicts = pd.read_csv(paper_run / "results/tables/verdicts.csv")
    groups = set(verdicts["group"])
    assert {"ranking_main_vs_seed17", "ranking_main_vs_seed23"} <= groups  # Table 6 against the repeats
    if experiment == "paper_llama2":  # three collections: each left out in turn (Table 6)
        assert {f"leave_out_collection_{k}" for k in range(3)} <= groups
    assert verdicts["passed"].map(lambda v: str(v) in {"True", "False"}).all()


V1_SIZES = [
    "data.families=[4,1,1]",
    "data.cases_per_family=2",
    "train.max_epochs=2",
    "train.patience=2",
    "attribution.max_questions=2",
    "evaluation.bootstrap_resamples=200",
    "evaluation.n_random=4",
    "evaluation.randomisation_questions=0",
]


@pytest.mark.slow
def test_controlled_v1_paper_runs_on_a_tiny_smollm3(
    paper_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`controlled_v1_paper` (Tables 3 and 9: a softmax layer over the 15 sets on frozen SmolLM3, FP32 IG with
    aligned paired references) on the tiny SmolLM3, every stage to ``tables`` in one process
    (``run_pipeline``: the same outputs as ``dvc repro``, tests/pipeline/test_pipeline_in_process.py), with
    every paper setting but sizes."""
    from xurs_pipeline.config import validate
    from xurs_pipeline.tasks.pipeline import run_pipeline

    overrides = ["experiment=controlled_v1_paper", f"model.source={paper_models['smollm3']}", *V1_SIZES]
    paper = flatten(compose(["experiment=controlled_v1_paper"], conf_dir=ROOT / "conf"))
    sized = flatten(compose(overrides, conf_dir=ROOT / "conf"))
    named = {o.split("=")[0] for o in overrides[1:]}
    assert {k for k in paper if paper[k] != sized[k]} <= named  # only sizes (and the local model) differ
    cfg = validate(compose(overrides, conf_dir=ROOT / "conf"))
    monkeypatch.chdir(tmp_path)
    reads: Reads = {}
    headlines = run_pipeline(recording(cfg, reads), until="tables")
    assert unlisted_reads(reads, asdict(cfg)) == {}  # every stage lists the params it reads
    assert headlines["attribute"]["R_max"] <= 0.05  # FP32 IG against the aligned partner (App. B.4)
    table3 = pd.read_csv(tmp_path / "results/tables/table3_endpoints.csv")
    explained = {case.split(":")[0] for case in table3["case"]}
    assert len(explained) == 2  # both questions: natural and aligned reference widths (Eq. 10)
    table9 = pd.read_csv(tmp_path / "results/tables/table9_localisation.csv")
    assert set(table9["record_id"]) == explained
    assert set(table9["reference"]) == {"aligned"}
    settings = pd.read_csv(tmp_path / "results/tables/table5_attribution.csv").set_index("setting")["value"]
    assert (settings["method"], settings["reference"]) == ("ig", "aligned")
    assert "float32" in settings.to_string()
