"""Config schema of the ``evaluation`` section (stages ``gates``, ``mask_eval`` and ``checks``).

Every threshold the paper states is a field here, with the table or appendix it comes from; the
library functions take the small threshold dataclasses, never this whole section.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xurs_pipeline.attribution.config import MAX_SAMPLES_PER_QUESTION, METHODS, TARGET_NAMES
from xurs_pipeline.attribution.variants import check_entries, variant_name


def _require(ok: bool, key: str, value: object, allowed: str) -> None:
    if not ok:
        raise ValueError(f"evaluation.{key}={value!r}: must be {allowed}")


def _one_of(key: str, value: str, allowed: tuple[str, ...]) -> None:
    """``evaluation.<key>`` is one of ``allowed`` (ValueError naming them: 'a', 'b' or 'c')."""
    named = ", ".join(repr(a) for a in allowed[:-1])
    _require(value in allowed, key, value, f"{named} or {allowed[-1]!r}")


def _check_unit(prefix: str, values: dict[str, float]) -> None:
    for name, value in values.items():
        _require(0.0 <= value <= 1.0, f"{prefix}.{name}", value, "in [0, 1]")


def _check_tolerances(prefix: str, values: dict[str, float], largest: float = 1.0) -> None:
    """Tolerances on a difference of widths or residuals (at most 1: widths lie in [0, 1], Eq. 2) or, with
    ``largest`` 2, of mass vectors (App. D.3's total absolute error E_m, at most 2): in [0, largest), since a
    tolerance of ``largest`` or more passes any run."""
    for name, value in values.items():
        key = f"{prefix}.{name}" if prefix else name
        _require(
            0.0 <= value < largest,
            key,
            value,
            f"in [0, {largest:g}): no difference exceeds {largest:g}, so {largest:g} or more passes any run",
        )


SWAP_RANDOMISE = ("head", "tuned", "none")  # evaluation.swap_randomise
# evaluation.swap_methods: the paper's estimator (the attribute runs), attribution.config.TOKEN_METHODS
# (through attribution/methods/) and the two nulls (evaluation/swap/readings.py), in the comparison's order
SWAP_METHODS = (
    "paper",
    "grad_l2",
    "grad_x_input",
    "occlusion_token",
    "layer_ig",
    "occlusion_span",
    "shapley_span",
    "input_only",
    "random",
)
# named only where asked for: sequential_ig costs prompt tokens x attribution.sequential_ig_steps gradients
SWAP_OPT_IN = ("sequential_ig",)
SWAP_CHOICES = SWAP_METHODS + SWAP_OPT_IN  # what evaluation.swap_methods may name (or vary: name@key=value)


@dataclass
class RankingThresholds:
    """Table 6 (App. B.3): ranking agreement between repeated calculations (collections, seeds)."""

    median_section_spearman_min: float = 0.90
    top_option_agreement_min: float = 0.80
    mean_topk_overlap_min: float = 0.75
    topk: int = 20
    median_share_difference_max: float = 0.02
    max_width_difference_max: float = 1e-6

    def __post_init__(self) -> None:
        _require(self.topk >= 1, "ranking.topk", self.topk, "a positive integer")
        _check_tolerances("ranking", {"max_width_difference_max": self.max_width_difference_max})
        _check_unit(
            "ranking",
            {
                "median_section_spearman_min": abs(self.median_section_spearman_min),
                "top_option_agreement_min": self.top_option_agreement_min,
                "mean_topk_overlap_min": self.mean_topk_overlap_min,
                "median_share_difference_max": self.median_share_difference_max,
            },
        )


@dataclass
class NumericsThresholds:
    """Table 7 (App. B.4): value agreement between sample counts / seeds, and completeness (Eq. 9).

    The IG criteria of App. B.4 use the same fields with ``residual_aggregate="mean"`` (per-reference
    residuals) and ``topk=3``; see :class:`IgThresholds`.
    """

    _section = "numerics"  # the key errors name (evaluation.<_section>.<field>); not a config field
    residual_aggregate: str = "median"  # median (EG, Table 7) | mean (IG, per reference)
    residual_center_max: float = 0.01
    max_residual_max: float = 0.05
    median_spearman_min: float = 0.95
    median_topk_overlap_min: float = 0.80
    topk: int = 20
    median_cosine_min: float = 0.99
    median_relative_distance_max: float = 0.10

    def __post_init__(self) -> None:
        _require(
            self.residual_aggregate in ("median", "mean"),
            f"{self._section}.residual_aggregate",
            self.residual_aggregate,
            "'median' or 'mean'",
        )
        _require(self.topk >= 1, f"{self._section}.topk", self.topk, "a positive integer")
        distance = self.median_relative_distance_max
        _require(distance >= 0, f"{self._section}.median_relative_distance_max", distance, "non-negative")
        _check_tolerances(
            self._section, {name: getattr(self, name) for name in ("residual_center_max", "max_residual_max")}
        )
        _check_unit(
            self._section,
            {
                "median_spearman_min": abs(self.median_spearman_min),
                "median_topk_overlap_min": self.median_topk_overlap_min,
                "median_cosine_min": abs(self.median_cosine_min),
            },
        )


@dataclass
class IgThresholds(NumericsThresholds):
    """App. B.4, FP32 IG: mean per-reference residual <= 0.01, max <= 0.05, top-three overlap >= 0.80."""

    _section = "ig"
    residual_aggregate: str = "mean"
    topk: int = 3


@dataclass
class GateThresholds:
    """App. D.3: the controlled model must pass these before its attributions are interpreted."""

    mass_error_max: float = 0.20  # mean E_m, with and without a distinguishing result, separately
    width_error_max: float = 0.05
    accuracy_min: float = 0.80  # on questions with a distinguishing result
    width_drop_share_min: float = 0.90
    irrelevant_mass_change_max: float = 0.05
    irrelevant_width_change_max: float = 0.02
    rearrangement_mass_change_max: float = 0.10
    validity_tolerance: float = 1e-6

    def __post_init__(self) -> None:
        widths = ("width_error_max", "irrelevant_width_change_max", "validity_tolerance")
        masses = ("mass_error_max", "irrelevant_mass_change_max", "rearrangement_mass_change_max")
        _check_tolerances("gates", {name: getattr(self, name) for name in widths})
        _check_tolerances("gates", {name: getattr(self, name) for name in masses}, largest=2.0)
        _check_unit(
            "gates", {"accuracy_min": self.accuracy_min, "width_drop_share_min": self.width_drop_share_min}
        )


@dataclass
class EvaluationConfig:
    seed: int = 0
    # Zero-masking (Eq. 8, Sec. 5.2) and its question-level bootstrap (Table 1).
    n_random: int = 20
    top_k_max: int = 10
    mask_batch_size: int = 16
    mask_reuse_prefix: bool = True  # run the unmasked prompt once into the key/value cache (same results)
    precision: str = "float32"  # backbone arithmetic of the zero-masking passes: float32 | bfloat16 | float16
    bootstrap_resamples: int = 10_000
    confidence: float = 0.95
    bootstrap_method: str = "percentile"  # percentile | BCa (scipy.stats.bootstrap)
    max_questions: int = 0  # 0 = every explained question
    device: str = "auto"  # auto | cpu | cuda (zero-masking forward passes)
    # Target functions measured by zero-masking (width is the paper's; entropy/betp are comparisons).
    targets: list[str] = field(default_factory=lambda: ["width"])
    # Reference checks (Eq. 10, Table 3): warn when preparation moves the width difference more than this.
    reference_shift_warning: float = 0.01
    ranking: RankingThresholds = field(default_factory=RankingThresholds)
    numerics: NumericsThresholds = field(default_factory=NumericsThresholds)
    ig: IgThresholds = field(default_factory=IgThresholds)
    gates: GateThresholds = field(default_factory=GateThresholds)
    # Model-randomisation sanity check: head, then this many top transformer blocks, on the first
    # ``randomisation_questions`` explained questions (0 = skip the check).
    randomisation_blocks: int = 2
    randomisation_questions: int = 2
    # The swap control's randomised models (stage attribute_swap): "head" re-initialises each model's head;
    # "tuned" also its tuned blocks (train.adaptation=partial: the top train.partial_layers blocks), so that
    # A and B keep only the frozen blocks they share; "none" runs no randomised model (a seed of a sweep whose
    # sanity runs another seed carries: it saves about half of attribute_swap's gradient evaluations).
    swap_randomise: str = "head"
    # The swap study's method comparison (evaluation/swap/readings.py, docs/swap-control.md): the methods
    # read on every probe under both models, the behavioural margin |e1 - e2| / (e1 + e2) from which a
    # probe counts as clear (evaluation/swap/behaviour.py), and layer_ig's integration steps.
    swap_methods: list[str] = field(default_factory=lambda: list(SWAP_METHODS))
    swap_clear_margin: float = 0.2
    swap_layer_ig_steps: int = 32
    # More attribution methods on the main run's questions (stage attribute_compare,
    # docs/attribution-methods.md): distinct names of attribution.config.METHODS besides attribution.method,
    # each with its own keys at their defaults; the report's question pages show the first beside the main
    # method, and the stage measures how far every pair agrees and what each costs. [] = none.
    compare_methods: list[str] = field(default_factory=list)
    # Other attribution runs (directories under paths.artifacts, e.g. a second seed or sample count)
    # compared with the main run by the Table 6 and Table 7 criteria.
    comparison_runs: list[str] = field(default_factory=list)
    # Repeated attribution runs made inside the pipeline (stage attribute_repeats; App. B.3 seeds 17 and
    # 23, Table 7, Table 2's rank and vector columns): the main run's settings with each of these seeds and
    # ``repeat_n_samples`` samples (0 = the main run's n_samples; IG, which draws nothing at random: that
    # many starting quadrature points, 0 = twice ig_points), compared with the main run in ``checks``.
    repeat_seeds: list[int] = field(default_factory=lambda: [17, 23])
    repeat_n_samples: int = 0
    # Splits of the controlled data on which the App. D.3 gates are evaluated (those present are used).
    gate_splits: list[str] = field(default_factory=lambda: ["dev", "test"])

    def __post_init__(self) -> None:
        self._check_masking()
        self._check_checks()
        self._check_swap()
        self._check_compare()

    def _check_masking(self) -> None:
        """Zero-masking and its bootstrap (Eq. 8, Table 1): seed, counts, confidence, device, precision."""
        _require(0 <= self.seed < 2**32, "seed", self.seed, "in [0, 2**32 - 1]")
        _require(
            1 <= self.n_random <= MAX_SAMPLES_PER_QUESTION,
            "n_random",
            self.n_random,
            f"in [1, {MAX_SAMPLES_PER_QUESTION}]",
        )
        _require(self.top_k_max >= 1, "top_k_max", self.top_k_max, "a positive integer")
        _require(self.mask_batch_size >= 1, "mask_batch_size", self.mask_batch_size, "a positive integer")
        _require(
            100 <= self.bootstrap_resamples <= MAX_SAMPLES_PER_QUESTION,
            "bootstrap_resamples",
            self.bootstrap_resamples,
            f"in [100, {MAX_SAMPLES_PER_QUESTION}]",
        )
        _require(0.0 < self.confidence < 1.0, "confidence", self.confidence, "in (0, 1)")
        _one_of("bootstrap_method", self.bootstrap_method, ("percentile", "BCa"))
        _one_of("device", self.device, ("auto", "cpu", "cuda"))
        _one_of("precision", self.precision, ("float32", "bfloat16", "float16"))
        _require(self.max_questions >= 0, "max_questions", self.max_questions, ">= 0 (0 = all)")
        targets = self.targets
        valid = bool(targets) and set(targets) <= set(TARGET_NAMES) and len(set(targets)) == len(targets)
        allowed = f"a non-empty list of distinct names from {sorted(TARGET_NAMES)}"
        _require(valid, "targets", targets, allowed)

    def _check_checks(self) -> None:
        """The checks stage's repeats, reference shift, randomisation and the gates' splits."""
        seeds = self.repeat_seeds
        valid = all(0 <= s < 2**32 for s in seeds) and len(set(seeds)) == len(seeds)
        _require(valid, "repeat_seeds", seeds, "distinct seeds in [0, 2**32 - 1]")
        _require(self.repeat_n_samples >= 0, "repeat_n_samples", self.repeat_n_samples, ">= 0 (0 = the run)")
        _check_tolerances("", {"reference_shift_warning": self.reference_shift_warning})
        questions, blocks = self.randomisation_questions, self.randomisation_blocks
        _require(questions >= 0, "randomisation_questions", questions, ">= 0")
        _require(blocks >= 0, "randomisation_blocks", blocks, ">= 0")
        splits = self.gate_splits
        _require(set(splits) <= {"train", "dev", "test"}, "gate_splits", splits, "a list of train/dev/test")

    def _check_swap(self) -> None:
        """The swap study's randomised models, layer IG steps, compared entries (``attribution/variants.py``:
        each computation named once) and clear margin."""
        scope = self.swap_randomise
        _require(scope in SWAP_RANDOMISE, "swap_randomise", scope, f"one of {list(SWAP_RANDOMISE)}")
        _require(
            2 <= self.swap_layer_ig_steps <= MAX_SAMPLES_PER_QUESTION,
            "swap_layer_ig_steps",
            self.swap_layer_ig_steps,
            f"in [2, {MAX_SAMPLES_PER_QUESTION}]",
        )
        methods = self.swap_methods
        names = {variant_name(m) for m in methods}
        valid = bool(methods) and names <= set(SWAP_CHOICES) and len(set(methods)) == len(methods)
        allowed = f"a non-empty list of distinct names from {list(SWAP_CHOICES)} or their variants"
        _require(valid, "swap_methods", methods, f"{allowed} (name@key=value, docs/attribution-methods.md)")
        try:
            check_entries(methods, layer_ig_steps=self.swap_layer_ig_steps)
        except ValueError as err:
            raise ValueError(f"evaluation.swap_methods: {err}") from None
        margin = self.swap_clear_margin
        _require(0.0 <= margin < 1.0, "swap_clear_margin", margin, "in [0, 1)")

    def _check_compare(self) -> None:
        """``compare_methods``: distinct names of ``attribution.config.METHODS``."""
        compared = self.compare_methods
        valid = set(compared) <= set(METHODS) and len(set(compared)) == len(compared)
        _require(valid, "compare_methods", compared, f"distinct names from {list(METHODS)} ([] = none)")
