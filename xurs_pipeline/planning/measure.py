"""Per-sample costs timed on this machine, on a backbone of the config's shape with random weights (the
cost of a gradient does not depend on the weights' values), on its CPU or, where the plan is for a CUDA
device and this machine has one, on its GPU (``measurement_device``)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable

import torch
from transformers import AutoModel, PretrainedConfig

from xurs_pipeline.config import RootConfig
from xurs_pipeline.credal import credal_width
from xurs_pipeline.models.adapters import LoraSpec, apply_adaptation
from xurs_pipeline.models.backbone import TORCH_DTYPES
from xurs_pipeline.models.classifier import RandomSetClassifier, feature_width
from xurs_pipeline.models.heads import RandomSetHead
from xurs_pipeline.planning.estimate import Costs

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}
CPU = torch.device("cpu")


def measurement_device(kind: str) -> torch.device:
    """Where ``--measure`` times the costs: the GPU when the plan's device is ``kind == "cuda"`` and this
    machine has one (the costs then are that card's), else this machine's CPU."""
    return torch.device("cuda" if kind == "cuda" and torch.cuda.is_available() else "cpu")


def describe_device(device: torch.device) -> str:
    """``'cuda (NVIDIA H100 80GB HBM3)'`` or ``'cpu (2 threads)'``: what a measurement ran on."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({torch.get_num_threads()} threads)"


def _classifier(
    config: PretrainedConfig, cfg: RootConfig, dtype: torch.dtype, device: torch.device = CPU
) -> RandomSetClassifier:
    m = cfg.model
    with device:  # parameters are created (and randomly initialised) where they are timed
        backbone = AutoModel.from_config(config, dtype=dtype).eval()
        width = feature_width(config.hidden_size, m.feature_layers, m.pooling)
        head = RandomSetHead(width, m.output_kind, m.head, m.head_hidden, m.conversion, depth=m.head_depth)
    return RandomSetClassifier(backbone, head, m.padding_side, m.feature_layers, m.pooling).to(device)


def _seconds_per_row(step: Callable[[], None], rows: int, calls: int, device: torch.device = CPU) -> float:
    step()  # warm-up (allocator, kernels)
    _synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        step()
    _synchronize(device)  # CUDA kernels run asynchronously: wait for them before reading the clock
    return (time.perf_counter() - start) / (calls * rows)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _inputs(
    rows: int, tokens: int, hidden: int, dtype: torch.dtype, grad: bool, device: torch.device = CPU
) -> tuple[torch.Tensor, ...]:
    """(rows, tokens, hidden) input embeddings in ``dtype``, an all-ones mask and positions, on ``device``."""
    embeds = (0.02 * torch.randn(rows, tokens, hidden, device=device)).to(dtype).requires_grad_(grad)
    mask = torch.ones(rows, tokens, dtype=torch.long, device=device)
    positions = torch.arange(tokens, device=device).expand(rows, tokens)
    return embeds, mask, positions


def _save_and_load_seconds(config: PretrainedConfig, dtype: torch.dtype) -> tuple[float, float]:
    """Seconds to write a backbone of ``config``'s shape as safetensors and to load it back (random weights:
    the bytes, not the values, set the cost)."""
    model = AutoModel.from_config(config, dtype=dtype)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        model.save_pretrained(tmp)
        saved = time.perf_counter()
        AutoModel.from_pretrained(tmp, dtype=dtype)
        return saved - start, time.perf_counter() - saved


def attributed_classifier(
    config: PretrainedConfig, cfg: RootConfig, device: torch.device = CPU
) -> RandomSetClassifier:
    """The classifier attribution explains, with random weights: backbone of ``config``'s shape in
    ``attribution.precision`` with the experiment's adaptation (LoRA adapters merged into the weights
    under ``attribution.merge_lora``, else beside them, as ``load_classifier`` gives them), frozen, in
    eval mode, on ``device``."""
    t = cfg.train
    model = _classifier(config, cfg, TORCH_DTYPES[cfg.attribution.precision], device)
    lora = LoraSpec(t.lora_rank, t.lora_alpha, 0.0, list(t.lora_targets))
    apply_adaptation(model, t.adaptation, t.partial_layers, lora)
    if t.adaptation == "lora" and cfg.attribution.merge_lora:
        model.backbone = model.backbone.merge_and_unload()
    return model.to(device).eval().requires_grad_(False)


def _gradient_cost(
    cfg: RootConfig, config: PretrainedConfig, tokens: int, calls: int, device: torch.device
) -> float:
    """Seconds per attribution gradient sample: d width / d input embeddings, ``samples_per_call`` rows, on
    the classifier attribution explains (:func:`attributed_classifier`; on an H100, LoRA adapters left
    beside the weights make a half-precision sample 2-2.5x dearer than merged ones)."""
    a = cfg.attribution
    model = attributed_classifier(config, cfg, device)
    x, mask, pos = _inputs(
        a.samples_per_call, tokens, config.hidden_size, TORCH_DTYPES[a.precision], True, device
    )

    def gradient() -> None:
        width = credal_width(model(x, mask, pos).masses.float(), validate=False)[:, 0].sum()
        torch.autograd.grad(width, x)

    return _seconds_per_row(gradient, a.samples_per_call, calls, device)


def _training_costs(
    cfg: RootConfig, config: PretrainedConfig, tokens: int, calls: int, device: torch.device
) -> tuple[float, float | None]:
    """Seconds per feature-pass example (no gradients) and per training example (None for head-only)."""
    t, h, dtype = cfg.train, config.hidden_size, TORCH_DTYPES[cfg.model.dtype]
    trained = _classifier(config, cfg, dtype, device)
    lora = LoraSpec(t.lora_rank, t.lora_alpha, t.lora_dropout, list(t.lora_targets))
    apply_adaptation(trained, t.adaptation, t.partial_layers, lora)
    fx, fmask, fpos = _inputs(t.feature_batch_size, tokens, h, dtype, False, device)

    def feature() -> None:
        with torch.no_grad():
            trained(fx, fmask, fpos)

    feature_example = _seconds_per_row(feature, t.feature_batch_size, calls, device)
    if t.adaptation == "head_only":
        return feature_example, None
    trained.train()
    tx, tmask, tpos = _inputs(t.batch_size, tokens, h, dtype, False, device)
    autocast = AUTOCAST.get(t.mixed_precision)

    def train_step() -> None:
        with torch.autocast(device.type, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            masses = trained(tx, tmask, tpos).masses
        masses.float()[:, 0].clamp_min(1e-12).log().sum().neg().backward()

    return feature_example, _seconds_per_row(train_step, t.batch_size, calls, device)


def measure_costs(
    cfg: RootConfig, config: PretrainedConfig, tokens: int, calls: int = 2, device: torch.device = CPU
) -> Costs:
    """Seconds per attribution gradient sample (``attribution.samples_per_call`` rows per call, in
    ``attribution.precision``), per training example (``train.batch_size`` rows, forward and backward with
    the adaptation under ``train.mixed_precision``) and per feature-pass example (no gradients), and to
    save and load the backbone (in ``model.dtype``). Per-sample costs are timed on ``device``, one model
    there at a time (a 7B model in two copies need not fit); the save and load on this machine's disk."""
    torch.manual_seed(0)
    gradient_sample = _gradient_cost(cfg, config, tokens, calls, device)
    _release(device)
    feature_example, train_example = _training_costs(cfg, config, tokens, calls, device)
    _release(device)
    save_model, load_model = _save_and_load_seconds(config, TORCH_DTYPES[cfg.model.dtype])
    return Costs(gradient_sample, train_example, feature_example, load_model, save_model)


def _release(device: torch.device) -> None:
    """Give the cached blocks of the model just timed back to the device before the next one is built."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
