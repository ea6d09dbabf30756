"""Per-sample costs timed on this machine, on a backbone of the config's shape with random weights (the
cost of a gradient does not depend on the weights' values)."""

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


def _classifier(config: PretrainedConfig, cfg: RootConfig, dtype: torch.dtype) -> RandomSetClassifier:
    m = cfg.model
    backbone = AutoModel.from_config(config, dtype=dtype).eval()
    width = feature_width(config.hidden_size, m.feature_layers, m.pooling)
    head = RandomSetHead(width, m.output_kind, m.head, m.head_hidden, m.conversion, depth=m.head_depth)
    return RandomSetClassifier(backbone, head, m.padding_side, m.feature_layers, m.pooling)


def _seconds_per_row(step: Callable[[], None], rows: int, calls: int) -> float:
    step()  # warm-up (allocator, kernels)
    start = time.perf_counter()
    for _ in range(calls):
        step()
    return (time.perf_counter() - start) / (calls * rows)


def _inputs(rows: int, tokens: int, hidden: int, dtype: torch.dtype, grad: bool) -> tuple[torch.Tensor, ...]:
    embeds = (0.02 * torch.randn(rows, tokens, hidden)).to(dtype).requires_grad_(grad)
    mask = torch.ones(rows, tokens, dtype=torch.long)
    positions = torch.arange(tokens).expand(rows, tokens)
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


def measure_costs(cfg: RootConfig, config: PretrainedConfig, tokens: int, calls: int = 2) -> Costs:
    """Seconds per attribution gradient sample (``attribution.samples_per_call`` rows per call, in
    ``attribution.precision``), per training example (``train.batch_size`` rows, forward and backward with
    the adaptation under ``train.mixed_precision``) and per feature-pass example (no gradients), and to
    save and load the backbone (in ``model.dtype``)."""
    torch.manual_seed(0)
    h = config.hidden_size
    a, t = cfg.attribution, cfg.train
    attribution = _classifier(config, cfg, TORCH_DTYPES[a.precision])
    rows = a.samples_per_call
    x, mask, pos = _inputs(rows, tokens, h, TORCH_DTYPES[a.precision], True)

    def gradient() -> None:
        width = credal_width(attribution(x, mask, pos).masses.float(), validate=False)[:, 0].sum()
        torch.autograd.grad(width, x)

    gradient_sample = _seconds_per_row(gradient, rows, calls)
    model_dtype = TORCH_DTYPES[cfg.model.dtype]
    trained = _classifier(config, cfg, model_dtype)
    lora = LoraSpec(t.lora_rank, t.lora_alpha, t.lora_dropout, list(t.lora_targets))
    apply_adaptation(trained, t.adaptation, t.partial_layers, lora)
    fx, fmask, fpos = _inputs(t.feature_batch_size, tokens, h, model_dtype, False)

    def feature() -> None:
        with torch.no_grad():
            trained(fx, fmask, fpos)

    feature_example = _seconds_per_row(feature, t.feature_batch_size, calls)
    train_example = None
    if t.adaptation != "head_only":
        trained.train()
        tx, tmask, tpos = _inputs(t.batch_size, tokens, h, model_dtype, False)
        autocast = AUTOCAST.get(t.mixed_precision)

        def train_step() -> None:
            with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
                masses = trained(tx, tmask, tpos).masses
            masses.float()[:, 0].clamp_min(1e-12).log().sum().neg().backward()

        train_example = _seconds_per_row(train_step, t.batch_size, calls)
    save_model, load_model = _save_and_load_seconds(config, model_dtype)
    return Costs(gradient_sample, train_example, feature_example, load_model, save_model)
