"""Peak memory per stage, gradient evaluations and projected time of a composed config on a device.

Memory model (bytes), per stage that holds the backbone:
  process + weights + casts + optimiser + activations, where
  weights      = backbone parameters x bytes of ``model.dtype``;
  casts        = training under ``train.mixed_precision`` with wider weights: autocast's cached
                 half-precision copy of each weight, backbone parameters x 2;
  optimiser    = trainable parameters x 16 (float32 value, gradient, AdamW's two moments; LoRA adapters
                 are float32 whatever the backbone dtype);
  activations  = rows x prompt tokens x layers x (saved elements per token and layer) x bytes of the
                 compute dtype, the saved elements of a Llama-family block being
                 7 h + 3 h_kv + 4 i + heads x tokens (norm inputs and outputs, q, k, v before and after
                 RoPE, attention output and probabilities, the MLP's gate, up, SiLU and product), plus
                 6 h + i for LoRA dropout copies of the adapted inputs, plus 2 h float32 RMSNorm upcasts.
Rows: ``train.batch_size`` (training), ``attribution.samples_per_call`` (attribution: references are kept as
token ids and embedded per call, so they cost nothing here), ``train.feature_batch_size`` without
gradients (head-only feature pass: one block's activations at a time).
"""

from __future__ import annotations

from dataclasses import dataclass

from transformers import PretrainedConfig

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.config import RootConfig, compare_configs, repeat_config, rerun_config
from xurs_pipeline.planning.devices import GIB, Device
from xurs_pipeline.planning.shapes import ParameterCounts

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
MIXED_BYTES = {"bf16": 2, "fp16": 2}
OPTIMISER_BYTES_PER_TRAINABLE = 16


@dataclass(frozen=True)
class Shape:
    """What the activation model needs of a backbone config."""

    hidden: int
    kv_hidden: int
    intermediate: int
    layers: int
    heads: int

    @classmethod
    def of(cls, config: PretrainedConfig) -> Shape:
        heads = config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        return cls(
            hidden=config.hidden_size,
            kv_hidden=config.hidden_size // heads * kv_heads,
            intermediate=config.intermediate_size,
            layers=config.num_hidden_layers,
            heads=heads,
        )

    def saved_elements(self, tokens: int, lora: bool) -> int:
        """Activation elements saved for backward per token and layer (see the module docstring)."""
        h, i = self.hidden, self.intermediate
        return 7 * h + 3 * self.kv_hidden + 4 * i + self.heads * tokens + (6 * h + i if lora else 0)


@dataclass(frozen=True)
class StagePlan:
    stage: str
    peak_bytes: int
    gradient_evaluations: int
    seconds: float | None
    advice: str = ""  # the key to change when the stage does not fit the device


@dataclass(frozen=True)
class Workload:
    """Sizes the config leaves to the data: prompt tokens, training examples, explained questions, and the
    dev examples the training loop scores after every epoch (0 where unknown)."""

    prompt_tokens: int
    train_examples: int
    questions: int
    dev_examples: int = 0


@dataclass(frozen=True)
class Costs:
    """Measured or stated seconds: per attribution gradient sample, per training example (forward and
    backward), per feature-pass example (forward only); and the fixed costs of a stage that holds the model:
    loading the backbone's weights from disk, and writing them (a partially tuned backbone is saved whole).
    None: unknown (a fixed cost then counts as 0)."""

    gradient_sample: float | None = None
    train_example: float | None = None
    feature_example: float | None = None
    load_model: float | None = None
    save_model: float | None = None


def _activations(shape: Shape, rows: int, tokens: int, bytes_per: int, lora: bool) -> int:
    saved = (
        shape.layers * shape.saved_elements(tokens, lora) * bytes_per + shape.layers * 2 * shape.hidden * 4
    )
    return rows * tokens * saved


def training_bytes(
    cfg: RootConfig, counts: ParameterCounts, shape: Shape, device: Device, tokens: int
) -> int:
    """Peak of the ``train`` stage (LoRA / partial with gradients through the backbone; head-only: the
    feature pass, then a head on cached features)."""
    weights = counts.backbone * DTYPE_BYTES[cfg.model.dtype]
    if cfg.train.adaptation == "head_only":
        return device.process_bytes + weights + feature_pass_bytes(cfg, shape, tokens)
    compute = MIXED_BYTES.get(cfg.train.mixed_precision, DTYPE_BYTES[cfg.model.dtype])
    lora = cfg.train.adaptation == "lora" and cfg.train.lora_dropout > 0
    optimiser = counts.trainable * OPTIMISER_BYTES_PER_TRAINABLE
    # autocast keeps a half-precision copy of every wider weight it casts until the forward ends
    casts = counts.backbone * compute if compute < DTYPE_BYTES[cfg.model.dtype] else 0
    return (
        device.process_bytes
        + weights
        + casts
        + optimiser
        + _activations(shape, cfg.train.batch_size, tokens, compute, lora)
    )


def feature_pass_bytes(cfg: RootConfig, shape: Shape, tokens: int) -> int:
    """No-grad forward of ``train.feature_batch_size`` prompts: one block's activations live at a time."""
    return (
        cfg.train.feature_batch_size
        * tokens
        * shape.saved_elements(tokens, False)
        * DTYPE_BYTES[cfg.model.dtype]
    )


def attribution_bytes(
    cfg: RootConfig, counts: ParameterCounts, shape: Shape, device: Device, tokens: int, samples_per_call: int
) -> int:
    """Peak of ``attribute``: weights in ``attribution.precision`` and ``samples_per_call`` rows with input
    gradients."""
    a = cfg.attribution
    weights = (counts.backbone + counts.adapter * counts.adapter_is_extra) * DTYPE_BYTES[a.precision]
    acts = _activations(shape, samples_per_call, tokens, DTYPE_BYTES[a.precision], False)
    return device.process_bytes + weights + acts


def gradient_evaluations(cfg: RootConfig, questions: int, tokens: int) -> dict[str, int]:
    """Most gradient samples of the attribution stages on ``questions`` prompts of ``tokens`` positions
    (``AttributionConfig.gradient_budget``: EG its samples, IG references x path pieces x quadrature points,
    kronrod its budget, which it usually undercuts): ``attribute`` (twice with its own rerun,
    :func:`rerun_config`), ``attribute_repeats`` (one run per ``evaluation.repeat_seeds``, each as
    :func:`repeat_config` makes it), ``attribute_targets`` (one run per comparison target besides the main
    one, at the same budget), ``attribute_compare`` (one run per ``evaluation.compare_methods`` entry, none
    without one: 0) and ``checks`` (the model-randomisation check: the first
    ``evaluation.randomisation_questions`` explained questions attributed again once per cascade step, the
    head and ``evaluation.randomisation_blocks`` blocks, at the main run's budget; the trained model's
    attribution is the main run's own)."""
    a, e = cfg.attribution, cfg.evaluation

    def run(at: AttributionConfig, n: int = questions) -> int:
        return n * at.gradient_budget(at.pieces_per_reference(tokens)).per_question

    steps = 1 + e.randomisation_blocks if e.randomisation_questions else 0
    return {
        "attribute": run(a) * (1 if rerun_config(cfg) is None else 2),
        "attribute_repeats": sum(run(repeat_config(cfg, s).attribution) for s in e.repeat_seeds),
        "attribute_targets": sum(t != a.target_fn for t in e.targets) * run(a),
        "attribute_compare": sum(run(other.attribution) for other in compare_configs(cfg).values()),
        "checks": steps * run(a, min(questions, e.randomisation_questions)),
    }


def _fits(peak: int, device: Device) -> bool:
    return peak <= device.memory_bytes


def _largest(limit: int, peak_of) -> int:  # type: ignore[no-untyped-def]
    """Largest n in 1..limit with peak_of(n) fitting (peak_of increasing in n), 0 if none."""
    best = 0
    for n in range(1, limit + 1):
        if not peak_of(n):
            break
        best = n
    return best


def advice_training(
    cfg: RootConfig, counts: ParameterCounts, shape: Shape, device: Device, tokens: int
) -> str:
    """The key to change when ``train`` does not fit (empty when it fits)."""
    if _fits(training_bytes(cfg, counts, shape, device, tokens), device):
        return ""
    base = device.process_bytes + counts.backbone * DTYPE_BYTES[cfg.model.dtype]
    if base > device.memory_bytes:
        return (
            f"the weights alone need {base / GIB:.1f} GiB: set model.dtype=bfloat16, model.keep_layers, "
            "or use a larger device"
        )
    if cfg.train.adaptation == "head_only":
        return "lower train.feature_batch_size"
    fits = _largest(
        cfg.train.batch_size,
        lambda n: _fits(
            training_bytes(_with(cfg, "train", batch_size=n), counts, shape, device, tokens), device
        ),
    )
    if fits:
        return (
            f"lower train.batch_size to {fits} (train.global_batch keeps the optimiser step by accumulating)"
        )
    if cfg.train.adaptation == "partial":
        return "lower train.partial_layers or data.max_tokens, or train.adaptation=lora"
    return "lower data.max_tokens or set model.keep_layers, or use a larger device"


def advice_attribution(
    cfg: RootConfig, counts: ParameterCounts, shape: Shape, device: Device, tokens: int
) -> str:
    a = cfg.attribution
    if _fits(attribution_bytes(cfg, counts, shape, device, tokens, a.samples_per_call), device):
        return ""
    fits = _largest(
        a.samples_per_call,
        lambda n: _fits(attribution_bytes(cfg, counts, shape, device, tokens, n), device),
    )
    if fits:
        return f"lower attribution.samples_per_call to {fits} (the same samples, batched differently)"
    if a.precision == "float32":
        return "set attribution.precision=bfloat16 (or float16), or lower data.max_tokens"
    return "lower data.max_tokens or set model.keep_layers, or use a larger device"


def _with(cfg: RootConfig, section: str, **changes: object) -> RootConfig:
    from dataclasses import replace

    return replace(cfg, **{section: replace(getattr(cfg, section), **changes)})


def plan_stages(
    cfg: RootConfig,
    counts: ParameterCounts,
    shape: Shape,
    device: Device,
    work: Workload,
    costs: Costs,
    processes: int = 1,
) -> list[StagePlan]:
    """One ``StagePlan`` per stage that holds the backbone: train_head (when ``train.head_first``), train,
    predict and the attribution stages. Seconds include the fixed costs of a stage process: start-up
    (imports) and loading the backbone; training adds the dev pass after every epoch and, for a partially
    tuned backbone, writing it.

    ``processes`` (a torchrun / accelerate launch, one device each): peak memory is per process; each
    process trains on its share of every optimiser step and scores its share of the dev prompts, and the
    attribution stages split the questions; the head-only feature pass runs on the main process (the
    others wait for its cache)."""
    tokens = work.prompt_tokens
    t = cfg.train
    start = device.startup_seconds + (costs.load_model or 0.0)
    head_pass = (
        device.process_bytes
        + counts.backbone * DTYPE_BYTES[cfg.model.dtype]
        + feature_pass_bytes(cfg, shape, tokens)
    )
    feature_seconds = _feature_seconds(start, costs, work)
    plans = []
    if t.head_first and t.adaptation != "head_only":
        plans.append(StagePlan("train_head", head_pass, 0, feature_seconds))
    tuning = _tuning_seconds(cfg, costs, work, start, processes)
    train_seconds = feature_seconds if tuning is None else tuning
    train_peak = training_bytes(cfg, counts, shape, device, tokens)
    plans.append(
        StagePlan("train", train_peak, 0, train_seconds, advice_training(cfg, counts, shape, device, tokens))
    )
    plans.append(StagePlan("predict", head_pass, 0, None))
    seconds = _attribution_seconds(cfg, work, costs, start, processes)
    return plans + _attribution_plans(cfg, counts, shape, device, work, seconds)


def _attribution_plans(
    cfg: RootConfig,
    counts: ParameterCounts,
    shape: Shape,
    device: Device,
    work: Workload,
    seconds: dict[str, float | None],
) -> list[StagePlan]:
    """One plan per attribution stage: its peak at ``attribution.samples_per_call``, its gradient evaluations
    over every question and its ``seconds`` (a stage without gradient evaluations holds no backbone)."""
    tokens = work.prompt_tokens
    peak = attribution_bytes(cfg, counts, shape, device, tokens, cfg.attribution.samples_per_call)
    advice = advice_attribution(cfg, counts, shape, device, tokens)
    return [
        StagePlan(stage, peak, n, seconds[stage], advice) if n else StagePlan(stage, 0, 0, None, advice)
        for stage, n in gradient_evaluations(cfg, work.questions, tokens).items()
    ]


def _share(n: int, processes: int) -> int:
    """The busiest process's share of ``n`` items split over ``processes``."""
    return -(-n // processes)


def _feature_seconds(start: float, costs: Costs, work: Workload) -> float | None:
    """The head-only feature pass over the training and dev prompts, once, after the stage's ``start``
    (None without its measured cost)."""
    if costs.feature_example is None:
        return None
    return start + costs.feature_example * (work.train_examples + work.dev_examples)


def _tuning_seconds(
    cfg: RootConfig, costs: Costs, work: Workload, start: float, processes: int
) -> float | None:
    """Tuning the backbone: each epoch's share of the training examples and the dev pass scored after it,
    plus writing a partially tuned backbone (None for head-only training or without the measured cost)."""
    t = cfg.train
    if t.adaptation == "head_only" or costs.train_example is None:
        return None
    dev_pass = (costs.feature_example or 0.0) * _share(work.dev_examples, processes)
    save = (costs.save_model or 0.0) if t.adaptation == "partial" else 0.0
    per_epoch = costs.train_example * _share(work.train_examples, processes) + dev_pass
    return start + per_epoch * t.max_epochs + save


def _attribution_seconds(
    cfg: RootConfig, work: Workload, costs: Costs, start: float, processes: int
) -> dict[str, float | None]:
    """Each attribution stage's seconds: the busiest process's gradient samples and its questions' reference
    widths, after the stage's ``start`` (None without the measured cost of a gradient sample)."""
    questions = _share(work.questions, processes)
    widths = reference_width_evaluations(cfg, questions) * (costs.feature_example or 0.0)
    per_process = gradient_evaluations(cfg, questions, work.prompt_tokens)
    if costs.gradient_sample is None:
        return dict.fromkeys(per_process)
    return {stage: start + costs.gradient_sample * n + widths for stage, n in per_process.items()}


def reference_width_evaluations(cfg: RootConfig, questions: int) -> int:
    """Forward-only width evaluations of one attribution run: every prepared reference of every collection
    per question, and the pool's natural widths once (training references; an aligned or zero reference
    is one per question)."""
    a = cfg.attribution
    if a.reference != "train":
        return questions
    return (questions + 1) * a.n_collections * a.refs_per_collection
