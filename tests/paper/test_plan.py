"""``xurs plan``: parameter counts equal the instantiated model's, a run that does not fit a device names
the key to change, and the command line works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from transformers import LlamaConfig

from xurs_pipeline.cli import main as xurs
from xurs_pipeline.config import RootConfig, compose, validate
from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation
from xurs_pipeline.models.backbone import load_backbone_dir, materialize_backbone
from xurs_pipeline.models.checkpoint import build_classifier
from xurs_pipeline.models.config import ModelConfig
from xurs_pipeline.planning.devices import DEVICES
from xurs_pipeline.planning.estimate import (
    Costs,
    Shape,
    StagePlan,
    Workload,
    gradient_evaluations,
    plan_stages,
)
from xurs_pipeline.planning.shapes import backbone_config, count_parameters
from xurs_pipeline.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
LLAMA2_7B_WITH_LM_HEAD = 6_738_415_616  # Llama-2-7B's published parameter count (Touvron et al., 2023)


def _paper(experiment: str, *overrides: str) -> RootConfig:
    return validate(compose([f"experiment={experiment}", *overrides], conf_dir=ROOT / "conf"))


@pytest.mark.parametrize(
    ("arch", "adaptation"),
    [("smollm3", "lora"), ("llama", "lora"), ("llama", "partial"), ("llama", "head_only")],
)
def test_counts_equal_the_instantiated_classifier(
    paper_models: dict[str, Path], tmp_path: Path, arch: str, adaptation: str
) -> None:
    pad = {"smollm3": "<|im_end|>", "llama": "</s>"}[arch]
    model_cfg = ModelConfig(
        backbone="hf", source=str(paper_models[arch]), pad_token=pad, head="mlp", pooling="last_mean"
    )
    train_cfg = TrainConfig(adaptation=adaptation, lora_rank=4, partial_layers=1)
    materialize_backbone(tmp_path / "bb", "hf", str(paper_models[arch]), pad_token=pad)
    classifier = build_classifier(
        load_backbone_dir(tmp_path / "bb"), ModelConfig(head="mlp", pooling="last_mean")
    )
    lora = LoraSpec(train_cfg.lora_rank, train_cfg.lora_alpha, train_cfg.lora_dropout, train_cfg.lora_targets)
    apply_adaptation(classifier, adaptation, train_cfg.partial_layers, lora)
    counts = count_parameters(backbone_config(model_cfg), model_cfg, train_cfg)
    assert counts.total == sum(p.numel() for p in classifier.parameters())
    assert counts.trainable == sum(p.numel() for p in classifier.parameters() if p.requires_grad)
    assert counts.head == sum(p.numel() for p in classifier.head.parameters())
    assert (counts.adapter == 0) == (adaptation == "head_only")


def test_paper_hub_ids_count_without_weights() -> None:
    """Llama-2-7B from transformers' defaults (no download, meta device): the published count less the LM
    head (the classifier has none)."""
    cfg = _paper("paper_llama2")
    counts = count_parameters(backbone_config(cfg.model), cfg.model, cfg.train)
    lm_head = LlamaConfig().vocab_size * LlamaConfig().hidden_size
    assert counts.backbone == LLAMA2_7B_WITH_LM_HEAD - lm_head
    per_layer = 8 * (
        4 * (4096 + 4096) + 2 * (4096 + 11008) + (11008 + 4096)
    )  # rank 8 on q,k,v,o,gate,up,down
    assert counts.adapter == 32 * per_layer


def test_a_run_that_does_not_fit_names_the_key_to_change() -> None:
    cfg = _paper("paper_smollm3")
    config = backbone_config(cfg.model)
    counts = count_parameters(config, cfg.model, cfg.train)
    work, costs = Workload(512, 10178, 100), Costs(gradient_sample=0.01)

    def stages(run: RootConfig, device: str) -> dict[str, StagePlan]:
        return {s.stage: s for s in plan_stages(run, counts, Shape.of(config), DEVICES[device], work, costs)}

    small = stages(cfg, "t4-16gb")
    assert small["attribute"].peak_bytes > DEVICES["t4-16gb"].memory_bytes
    assert "attribution.samples_per_call to" in small["attribute"].advice
    fitting = int(small["attribute"].advice.split(" to ")[1].split()[0])
    lowered = _paper("paper_smollm3", f"attribution.samples_per_call={fitting}")
    again = {
        s.stage: s for s in plan_stages(lowered, counts, Shape.of(config), DEVICES["t4-16gb"], work, costs)
    }
    assert again["attribute"].peak_bytes <= DEVICES["t4-16gb"].memory_bytes
    assert again["attribute"].advice == ""
    large = {
        s.stage: s for s in plan_stages(cfg, counts, Shape.of(config), DEVICES["h100-80gb"], work, costs)
    }
    assert all(s.peak_bytes <= DEVICES["h100-80gb"].memory_bytes and not s.advice for s in large.values())
    assert large["attribute"].gradient_evaluations == 100 * 512  # questions x samples, one collection
    assert large["attribute"].seconds == pytest.approx(100 * 512 * 0.01)


def test_gradient_evaluations_state_each_estimators_budget() -> None:
    """Per stage, questions x collections x the estimator's most samples: kronrod's budget (not IG's points),
    a kronrod repeat's raised first pass, one more run per comparison target, and the clue study's
    randomised-head re-attribution in ``checks`` (hand sums)."""
    repeat, targets = "evaluation.repeat_seeds=[17]", "evaluation.targets=[width,betp]"
    kronrod = _paper("controlled_direct_kronrod", repeat, targets)
    budget = kronrod.attribution.kronrod_max_evals
    assert kronrod.evaluation.randomisation_blocks == 0  # a clue study's nulls: the head, re-initialised
    assert gradient_evaluations(kronrod, questions=8, tokens=512) == {
        "attribute": 8 * budget,
        "attribute_repeats": 8 * budget,
        "attribute_targets": 8 * budget,
        "attribute_compare": 0,
        "checks": 8 * budget,
    }
    compared = _paper("controlled_direct_kronrod", "evaluation.compare_methods=[layer_ig,grad_l2]")
    steps = compared.attribution.layer_ig_steps  # each method: its own gradients per question
    assert gradient_evaluations(compared, questions=8, tokens=512)["attribute_compare"] == 8 * (steps + 1)
    off = _paper("controlled_direct_kronrod", "evaluation.randomisation_questions=0")
    assert gradient_evaluations(off, questions=8, tokens=512)["checks"] == 0
    cascade = _paper("controlled_direct_kronrod", "evaluation.randomisation_blocks=2")
    cascaded = gradient_evaluations(cascade, questions=5, tokens=512)["checks"]
    assert cascaded == 3 * 5 * budget  # head + 2 blocks
    certified = _paper("local", "attribution=certified")  # its own rerun: a second estimate per question
    spent = certified.attribution.certified_max_evals
    assert gradient_evaluations(certified, questions=2, tokens=512)["attribute"] == 2 * 2 * spent
    alone = _paper("local", "attribution=certified", "attribution.certified_rerun=false")
    assert gradient_evaluations(alone, questions=2, tokens=512)["attribute"] == 2 * spent
    four = ("attribution.refs_per_collection=4", "attribution.kronrod_max_evals=60")  # the first pass
    small = _paper("controlled_direct_kronrod", *four, repeat)
    repeats = gradient_evaluations(small, questions=1, tokens=512)["attribute_repeats"]
    assert repeats == 15 * 3 * 4  # three times the intervals
    eg = _paper("controlled_direct", "evaluation.repeat_seeds=[17,23]", "evaluation.repeat_n_samples=32")
    assert gradient_evaluations(eg, questions=3, tokens=512) == {
        "attribute": 3 * eg.attribution.n_samples,
        "attribute_repeats": 2 * 3 * 32,
        "attribute_targets": 0,
        "attribute_compare": 0,
        "checks": 3 * eg.attribution.n_samples,  # the head on the 3 questions (randomisation_questions 8)
    }


def test_plan_command_and_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no prepared prompts here: after `dvc repro` plan would size from those
    with pytest.raises(SystemExit) as stop:
        xurs(["plan", "--help"])
    assert stop.value.code == 0
    assert "--device" in capsys.readouterr().out
    code = xurs(
        [
            "plan",
            "experiment=paper_llama2",
            f"--conf={ROOT / 'conf'}",
            "--device",
            "t4-16gb",
            "--train-examples",
            "10178",
            "--questions",
            "100",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1  # something does not fit
    assert "NO: " in out
    assert "6,607,343,616" in out
    assert "ceilings" not in out  # EG spends exactly its samples
    assert (
        xurs(
            [
                "plan",
                "experiment=controlled_direct_kronrod",
                f"--conf={ROOT / 'conf'}",
                "--train-examples",
                "500",
                "--questions",
                "8",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "ceilings: kronrod stops where it meets its tolerance" in out
    assert "runs forwards only" not in out  # kronrod's gradients are planned
    compared = ["experiment=smoke", "evaluation.compare_methods=[occlusion_token]"]
    # a data-sheet device: the local one is timed above
    assert (
        xurs(
            [
                "plan",
                *compared,
                f"--conf={ROOT / 'conf'}",
                "--device",
                "t4-16gb",
                "--train-examples",
                "50",
                "--questions",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "evaluation.compare_methods entry occlusion_token runs forwards only (L + 1 per question" in out
    assert "attribution.method=eg runs forwards only" not in out
    assert xurs(["plan", "--device", "nosuch", "experiment=smoke", f"--conf={ROOT / 'conf'}"]) == 2
    assert "--device 'nosuch'" in capsys.readouterr().err


def test_projected_time_adds_the_fixed_costs_and_the_dev_pass() -> None:
    """Seconds per stage = start-up + backbone load + per-example work; training scores the dev prompts after
    every epoch, and a partially tuned backbone is written once (a hand computation of the same sums)."""
    cfg = _paper("paper_smollm3")
    config = backbone_config(cfg.model)
    counts = count_parameters(config, cfg.model, cfg.train)
    work = Workload(512, 100, 10, dev_examples=20)
    costs = Costs(0.01, train_example=0.1, feature_example=0.02, load_model=3.0, save_model=5.0)
    device = DEVICES["h100-80gb"]  # start-up 0: not measured for a data-sheet device

    def seconds(run: RootConfig, costs: Costs) -> dict[str, float | None]:
        return {s.stage: s.seconds for s in plan_stages(run, counts, Shape.of(config), device, work, costs)}

    epochs = cfg.train.max_epochs
    lora = seconds(cfg, costs)
    assert lora["train"] == pytest.approx(3.0 + (0.1 * 100 + 0.02 * 20) * epochs)
    assert lora["train_head"] == pytest.approx(3.0 + 0.02 * (100 + 20))
    evaluations = 10 * cfg.attribution.n_samples * cfg.attribution.n_collections
    widths = (10 + 1) * cfg.attribution.n_collections * cfg.attribution.refs_per_collection * 0.02
    assert lora["attribute"] == pytest.approx(3.0 + 0.01 * evaluations + widths)
    partial = seconds(_paper("paper_smollm3", "train.adaptation=partial"), costs)
    assert partial["train"] == pytest.approx(lora["train"] + 5.0)  # the tuned backbone is written
    unknown = seconds(cfg, Costs(gradient_sample=0.01, train_example=0.1, feature_example=0.02))
    assert unknown["train"] == pytest.approx(lora["train"] - 3.0)  # unknown fixed costs count as 0


def test_mixed_precision_training_counts_autocasts_weight_copies() -> None:
    """bf16 autocast over float32 weights keeps a bf16 copy of each weight during the forward: the training
    peak grows by backbone parameters x 2 bytes (activations shrink to 2 bytes); none over bf16 weights."""
    from xurs_pipeline.planning.estimate import _activations, training_bytes

    mixed = _paper("paper_smollm3", "model.dtype=float32")
    plain = _paper("paper_smollm3", "model.dtype=float32", "train.mixed_precision=no")
    config = backbone_config(mixed.model)
    counts = count_parameters(config, mixed.model, mixed.train)
    shape, device = Shape.of(config), DEVICES["h100-80gb"]
    lora = mixed.train.lora_dropout > 0
    acts = {b: _activations(shape, mixed.train.batch_size, 512, b, lora) for b in (2, 4)}
    assert training_bytes(mixed, counts, shape, device, 512) - acts[2] == (
        training_bytes(plain, counts, shape, device, 512) - acts[4] + counts.backbone * 2
    )
    half = _paper("paper_smollm3", "model.dtype=bfloat16")
    weights = counts.backbone * 2
    assert training_bytes(half, counts, shape, device, 512) == (
        device.process_bytes + weights + counts.trainable * 16 + acts[2]
    )


def test_measured_costs_time_the_attributed_classifier_where_planned() -> None:
    """``--measure`` times the classifier attribution explains (LoRA merged or not, every weight frozen), on
    the CPU unless the plan is for a GPU and one is here; every cost it returns is a positive time."""
    import torch
    from peft.tuners.lora import LoraLayer

    from xurs_pipeline.planning.measure import attributed_classifier, measure_costs, measurement_device

    cfg = _paper("paper_llama2", "attribution.samples_per_call=1", "train.feature_batch_size=1")
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=64,
    )
    model = attributed_classifier(config, _paper("paper_llama2", "attribution.merge_lora=false"))
    assert sum(isinstance(m, LoraLayer) for m in model.modules()) == 7  # q k v o gate up down of one layer
    merged = attributed_classifier(config, cfg)  # attribution.merge_lora: true, the default
    assert not any(isinstance(m, LoraLayer) for m in merged.modules())
    assert not any(p.requires_grad for p in model.parameters())
    assert not model.training
    assert measurement_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert measurement_device("cuda") == torch.device(expected)
    costs = measure_costs(cfg, config, tokens=8, calls=1)
    for name in ("gradient_sample", "train_example", "feature_example", "load_model", "save_model"):
        assert 0 < getattr(costs, name) < 60, name


def test_processes_split_training_and_attribution_time(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With N processes each trains on 1/N of every step and scores 1/N of the dev prompts, and the
    attribution stages split the questions (the busiest process's share, rounded up); memory is per process
    and the head-only feature pass stays on the main process. A global batch the processes cannot split
    is refused naming the key (hand sums of the same formulas as the one-process test above)."""
    cfg = _paper("paper_smollm3")
    config = backbone_config(cfg.model)
    counts = count_parameters(config, cfg.model, cfg.train)
    work = Workload(512, 100, 10, dev_examples=20)
    costs = Costs(0.01, train_example=0.1, feature_example=0.02, load_model=3.0)

    def plans(processes: int) -> dict[str, StagePlan]:
        stages = plan_stages(cfg, counts, Shape.of(config), DEVICES["h100-80gb"], work, costs, processes)
        return {s.stage: s for s in stages}

    one, four = plans(1), plans(4)
    a = cfg.attribution
    assert four["train"].seconds == pytest.approx(3.0 + (0.1 * 25 + 0.02 * 5) * cfg.train.max_epochs)
    widths = (3 + 1) * a.n_collections * a.refs_per_collection * 0.02  # 3 of the 10 questions
    assert four["attribute"].seconds == pytest.approx(3.0 + 0.01 * 3 * a.n_samples * a.n_collections + widths)
    assert four["attribute"].gradient_evaluations == one["attribute"].gradient_evaluations  # all processes
    assert four["train_head"].seconds == one["train_head"].seconds
    assert all(four[s].peak_bytes == one[s].peak_bytes for s in one)

    monkeypatch.chdir(tmp_path)
    common = [
        "plan",
        "experiment=paper_llama2",
        f"--conf={ROOT / 'conf'}",
        "--device",
        "h100-80gb",
        "--train-examples",
        "10178",
        "--questions",
        "100",
    ]
    assert xurs([*common, "--processes", "8"]) == 0
    assert "global batch 32 = 1 per process x 8 x 4 accumulation steps" in capsys.readouterr().out
    assert xurs([*common, "--processes", "3"]) == 1
    out = capsys.readouterr().out
    assert "NO: train.batch_size=1 x 3 processes does not divide train.global_batch=32" in out
    with pytest.raises(SystemExit) as stop:  # argparse's one-line usage error (commands/args.py)
        xurs([*common, "--processes", "0"])
    assert stop.value.code == 2


def test_a_gguf_header_is_parsed_once_a_process_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``backbone_config`` of a GGUF backbone parses the file's header (seconds: the tokenizer's vocabulary
    is in it) once per file and modification time; the config it gives is the header's each time."""
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    from xurs_pipeline.planning import shapes

    header = tmp_path / "tiny.gguf"
    header.write_bytes(b"GGUF")
    parsed: list[str] = []

    def fake_header(path: str, return_tensors: bool) -> dict:
        parsed.append(path)
        return {"config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 3}}

    monkeypatch.setattr(gguf_utils, "load_gguf_checkpoint", fake_header)
    shapes._gguf_config.cache_clear()
    model = ModelConfig(backbone="gguf", source=str(header))
    configs = [backbone_config(model) for _ in range(3)]
    assert parsed == [str(header)]
    assert {(c.model_type, c.hidden_size, c.num_hidden_layers) for c in configs} == {("llama", 64, 3)}
    header.write_bytes(b"GGUF, another")
    stat = header.stat()
    os.utime(header, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert backbone_config(model).hidden_size == 64
    assert parsed == [str(header)] * 2  # the changed file is read again
    shapes._gguf_config.cache_clear()


def test_this_machines_startup_is_timed_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """``local_device`` times a fresh interpreter's imports on its first call only (a plan per call in
    one session would otherwise start one each time)."""
    import subprocess

    from xurs_pipeline.planning import devices

    started: list[list[str]] = []
    real_run = subprocess.run

    def counting_run(args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(args)
        return real_run([devices.sys.executable, "-c", "pass"], **kwargs)

    monkeypatch.setattr(devices.subprocess, "run", counting_run)
    devices.local_device.cache_clear()
    first = devices.local_device()
    assert devices.local_device() is first
    assert devices.resolve_device("local") is first
    assert len(started) == 1
    assert "import xurs_pipeline.train.runner" in started[0][-1]
    assert first.startup_seconds > 0
    assert first.memory_bytes > 0
    devices.local_device.cache_clear()
