"""Config schema of the ``attribution`` section (the ``attribute`` stage and ``xurs explain``).

Defaults are the paper's SmolLM3 budget (Table 5) except precision (float32 runs everywhere).
Each field is range-checked in ``__post_init__``; errors name the key and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The paper's estimators integrate gradients from references to the input (attribution/estimators.py);
# the token methods explain the same function by other means (attribution/methods/).
PATH_METHODS = ("eg", "ig", "kronrod", "certified")
TOKEN_METHODS = (
    "occlusion_token",
    "occlusion_span",
    "shapley_span",
    "grad_l2",
    "grad_x_input",
    "layer_ig",
    "sequential_ig",
)
METHODS = PATH_METHODS + TOKEN_METHODS
REPLACEMENTS = ("zero", "mean", "reference")  # what an occluded token's embedding row becomes
# How a gradient method's coordinates (L, d) become one magnitude per token (attribution/reduction.py);
# ``own``: each method's own, as shipped (the paper's estimators and grad_l2 L2, the others |sum|)
REDUCTIONS = ("own", "l2", "abs_sum")
OWN_REDUCTION = {
    "eg": "l2",
    "ig": "l2",
    "kronrod": "l2",
    "certified": "l2",
    "grad_l2": "l2",
    "grad_x_input": "abs_sum",
    "layer_ig": "abs_sum",
    "sequential_ig": "abs_sum",
}
# The keys only some token methods read -> those methods; set away from its default under another method,
# a key is refused by name. (The paper estimators' keys are named instead, ESTIMATOR_KEYS below.)
METHOD_KEYS: dict[str, tuple[str, ...]] = {
    "replacement": ("occlusion_token", "occlusion_span", "shapley_span", "sequential_ig"),
    "span_tokens": ("occlusion_span", "shapley_span"),
    "layer_ig_steps": ("layer_ig",),
    "sequential_ig_steps": ("sequential_ig",),
    "reduction": tuple(OWN_REDUCTION),
}
# The paper estimators' own keys -> the estimators that read them. Not refused under another method (the
# experiments' presets set them for the estimator they choose, and a token method chosen on top ignores
# them) but named (``AttributionConfig.ignored_keys``: ``xurs check`` and ``xurs params`` print them) and
# left out of the params of the stages that run the configured method alone (``contracts.METHOD_READS``),
# of its fingerprint and of Table 5, so that setting one reruns and stamps nothing.
_IG_KEYS = ("ig_quadrature", "ig_points", "ig_adaptive", "ig_tolerance", "ig_refine_factor", "ig_max_points")
_KRONROD_KEYS = (
    "kronrod_tolerance",
    "kronrod_max_evals",
    "kronrod_intervals",
    "kronrod_stop",
    "kronrod_lead",
    "kronrod_rule",
)
_CERTIFIED_KEYS = (
    "certified_tolerance",
    "certified_vector_tolerance",
    "certified_max_evals",
    "certified_first_nodes",
    "certified_warp_points",
    "certified_rerun",
)
ESTIMATOR_KEYS: dict[str, tuple[str, ...]] = {
    "n_samples": ("eg",),
    **dict.fromkeys(_IG_KEYS, ("ig",)),
    **dict.fromkeys(_KRONROD_KEYS, ("kronrod",)),
    **dict.fromkeys(_CERTIFIED_KEYS, ("certified",)),
    "samples_per_call": PATH_METHODS,
}
# Keys that change no result (a progress bar): in no stage's params, no fingerprint, no pooled comparison.
NO_RESULT_KEYS = ("progress",)
# The attribute stage's own rerun (a second estimate its vectors are compared with, App. B.4's vector
# criteria): in that stage's params alone and in no fingerprint (the main run's rows do not depend on it).
RERUN_KEYS = ("certified_rerun",)


def kronrod_first_pass(rule: str, intervals: int, refs: int) -> int:
    """Gradient evaluations of kronrod's first pass over ``refs`` references of ``intervals`` equal intervals
    each: 15 nodes an interval under the ``k15`` rule, the ``trapezoid``'s intervals + 1 nodes a reference."""
    return (15 * intervals if rule == "k15" else intervals + 1) * refs


def unread_keys(method: str) -> tuple[str, ...]:
    """The paper estimators' keys ``method`` never reads (:data:`ESTIMATOR_KEYS`; a token method's own keys,
    :data:`METHOD_KEYS`, are refused away from their defaults under another method instead)."""
    return tuple(key for key, methods in ESTIMATOR_KEYS.items() if method not in methods)


SHAPLEY_MAX_SPANS = 12  # shapley_span enumerates every coalition of the spans: 2**12 forwards at most
PATHS = ("straight", "blocks")  # attribution/paths.py
REFERENCE_KINDS = ("train", "zero", "aligned")
REFERENCE_ALIGNMENTS = ("position", "sequence")  # how a training prompt is fitted to the question
RESULT_FILTERS = ("all", "with_result", "without_result")
ROUTES = ("direct", "answer_set")
TARGET_RULES = ("predicted", "correct", "all")
REFERENCE_ORDERS = ("first", "hash")
QUADRATURES = ("gausslegendre", "riemann_trapezoid", "riemann_left", "riemann_right", "riemann_middle")
PRECISIONS = ("float32", "bfloat16", "float16")
STOP_RULES = ("bound", "residual", "read")  # the kronrod stopping rules, attribution/quadrature.py
# kronrod's rule on each interval: Gauss-Kronrod 15 points (quadrature.py) or the trapezoid between two
# nodes, each interval's error exact from F at its ends (trapezoid.py)
INTERVAL_RULES = ("k15", "trapezoid")
LEAD_RULES = ("stop", *STOP_RULES)  # which rule orders kronrod's refinement ("stop": the stopping rule)
# Names of the target functions (``attribution.target_fn``, ``evaluation.targets``): the registry in
# ``targets.py`` is built from these, so validating a config never imports torch (stage start-up, issue 18).
TARGET_NAMES = ("width", "entropy", "betp")
DEVICES = ("auto", "cpu", "cuda")
NONFINITE_POLICIES = ("report", "raise", "retry")
# Gradient samples of one question (all collections; IG: references x ig_max_points). Sampling plans are
# held in memory (~70 bytes a sample: 300 MB at the limit), and at ~10^3 samples/s on a 135M model the
# limit is already over an hour per question; 10^12 would allocate terabytes.
MAX_SAMPLES_PER_QUESTION = 2**22


def with_method(cfg: AttributionConfig, method: str) -> AttributionConfig:
    """``cfg`` explaining with ``method`` instead: the keys only other methods read back at their defaults."""
    from dataclasses import replace

    defaults = AttributionConfig.__dataclass_fields__
    reset: dict[str, Any] = {
        key: defaults[key].default for key, readers in METHOD_KEYS.items() if method not in readers
    }
    return replace(cfg, **reset, method=method)


def _one_of(key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"attribution.{key}={value!r}: must be one of {allowed}")


def _at_least(key: str, value: float, low: float) -> None:
    if value < low:
        raise ValueError(f"attribution.{key}={value}: must be >= {low}")


def _tolerance(key: str, value: float) -> None:
    """A tolerance on a width difference (a residual, an error bound): in (0, 1), since a width is at most
    1 (Eq. 2) and a tolerance of 1 or more certifies any run at its first pass."""
    if not 0 < value < 1:
        raise ValueError(
            f"attribution.{key}={value}: must be in (0, 1): a width is at most 1, so a tolerance of 1 or "
            "more passes any run at its first pass"
        )


# the counts of gradient samples, points and evaluations: each at most MAX_SAMPLES_PER_QUESTION, whichever
# method reads it (a budget another method would read is refused as soon as it is set, not when it is used)
BUDGET_KEYS = (
    "n_samples",
    "samples_per_call",
    "ig_points",
    "ig_max_points",
    "kronrod_max_evals",
    "certified_max_evals",
    "certified_first_nodes",
    "certified_warp_points",
    "layer_ig_steps",
    "sequential_ig_steps",
    "refs_per_collection",
    "n_collections",
)


WARP_MIN_POINTS = 15  # the fewest forwards a path warp takes (16 equal segments; attribution/path_warp.py)


def check_certified(
    tolerance: float, vector_tolerance: float, first_nodes: int, warp_points: int = 0
) -> None:
    """ValueError naming the ``attribution.certified_*`` key out of range (``attribution/certified.py``)."""
    _tolerance("certified_tolerance", tolerance)
    if not 0 < vector_tolerance <= 1:
        raise ValueError(f"attribution.certified_vector_tolerance={vector_tolerance}: must be in (0, 1]")
    if first_nodes < 2 or first_nodes & (first_nodes - 1):
        raise ValueError(f"attribution.certified_first_nodes={first_nodes}: must be a power of 2, >= 2")
    if warp_points != 0 and warp_points < WARP_MIN_POINTS:
        raise ValueError(
            f"attribution.certified_warp_points={warp_points}: must be 0 (no warp) or >= "
            f"{WARP_MIN_POINTS} (16 equal segments)"
        )


def describe_references(kind: str, alignment: str) -> str:
    """How pages and reports name the references: ``kind`` (train, zero, aligned), with how training
    prompts were fitted to the question when they were aligned by token sequence."""
    return f"{kind}, aligned by token sequence" if kind == "train" and alignment == "sequence" else kind


@dataclass
class AttributionConfig:
    """Which questions, which references, which estimator, how much compute.

    method: ``eg`` (Expected Gradients, Eq. 3), ``ig`` (Integrated Gradients per reference), ``kronrod``
      (adaptive Gauss-Kronrod quadrature per reference to a stated tolerance, ``attribution.quadrature``)
      or ``certified`` (App. B.4 on the averaged attribution, refined where it fails,
      ``attribution.certified``), the paper's estimators; or a token method of ``attribution/methods/``:
      ``occlusion_token`` (F(X) - F(X with token i replaced), Eq. 8's zero-masking one token at a time),
      ``occlusion_span`` (the same per span), ``shapley_span`` (exact Shapley values of the spans),
      ``grad_l2`` (||dF/dx_i||_2), ``grad_x_input`` (sum_h x_ih dF/dx_ih), ``layer_ig`` (IG of the middle
      block's output from the first reference) or ``sequential_ig`` (IG of one token at a time).
    replacement: what an occluded token's embedding row becomes (occlusion and Shapley methods; Sequential
      IG's baseline row): ``zero``
      (Eq. 8), ``mean`` (the prompt's mean row) or ``reference`` (the first prepared reference's row).
    span_tokens: the span methods' players, consecutive blocks of this many positions (``shapley_span``, which
      enumerates every coalition, widens them where a prompt would have more than ``SHAPLEY_MAX_SPANS``
      spans to ceil(L / 12) positions, and the explanation says the width it grouped).
    layer_ig_steps: ``layer_ig``'s Gauss-Legendre points (captum ``LayerIntegratedGradients``).
    sequential_ig_steps: ``sequential_ig``'s Gauss-Legendre points per token (Sequential IG, Enguehard 2023:
      IG of one row from its ``replacement`` row to the input, the other rows at the input).
    reduction: how a gradient method's coordinates (L, d) become one magnitude per token: ``own`` (each
      method's shipped one, ``OWN_REDUCTION``), ``l2`` or ``abs_sum`` (``attribution/reduction.py``).
    reference: ``train`` (training prompts), ``zero`` (zero embeddings), ``aligned`` (paired prompt
      aligned to the question, Sec. 5.4: the other member of the question's pair).
    reference_alignment: how a training prompt is fitted to the question's L positions: ``position``
      (Sec. 3.3: truncated or right-padded, token i against token i) or ``sequence`` (beyond the paper:
      the paired prompt's alignment of Sec. 5.4 applied to each training prompt, so text it shares with the
      question sits at the question's positions and cannot receive attribution; the rest is the training
      prompt's own tokens fitted into the span, or padding). Nothing in it knows where a clue is.
    result_filter: on controlled data, explain ``all`` questions of the split, only those
      ``with_result`` or only those ``without_result`` (the uncertain ones: why is the model uncertain?).
      ``aligned`` needs one member of each pair: there ``all`` means ``with_result`` (Sec. 5.4).
    route: ``direct`` (attribute W_c) or ``answer_set`` (attribute each m(S), S ∋ c, |S| > 1; Eq. 4).
    target: explained answer c: ``predicted`` (argmax BetP on the original prompt), ``correct`` or ``all``.
    split / max_questions / record_ids: the questions: the first ``max_questions`` of the split (0 = all),
      or exactly the ``record_ids`` listed (then the split is not used and ``max_questions`` must be 0).
    n_collections x refs_per_collection training references, ordered ``first`` (file order) or
      ``hash`` (seeded SHA-256 ranking with ``reference_hash_seed``), consecutive non-overlapping.
    n_samples: EG samples per collection; samples_per_call: gradient samples per batched call.
    ig_*: quadrature, starting points per reference, adaptive refinement of references whose
      completeness residual exceeds ``ig_tolerance`` (x ``ig_refine_factor`` points, up to ``ig_max_points``).
    kronrod_*: the ``kronrod`` estimator's target for the mean per-reference error bound (which bounds the
      question's completeness residual, Eq. 9), its gradient-evaluation budget per collection (a question
      that exhausts it is flagged ``budget_exhausted``), the equal intervals each path starts with, and the
      stopping rule: ``bound`` (the mean error bound within the tolerance), ``residual`` (App. B.4: the
      mean per-reference exact residual within it, the largest within 5x; the bound still reported) or
      ``read`` (the order of the spans a caller reads certain, the largest residual within 5x the
      tolerance: ``attribution/read_order.py``; k15 only), each bisecting the reference that fails it
      most; ``kronrod_lead`` ``bound``, ``residual`` or ``read`` orders the refinement by that rule
      whatever the stop (``stop``, the default: the stopping rule's own order);
      ``kronrod_rule`` the rule on each interval: ``k15`` (Gauss-Kronrod, 30 evaluations a bisection) or
      ``trapezoid`` (one evaluation a bisection, each interval's error exact from F at its two nodes;
      ``attribution/trapezoid.py``; straight paths only).
    certified_*: the ``certified`` estimator (``attribution/certified.py``): the tolerance of the averaged
      residual (Eq. 9) and of its median over other random shifts, the tolerance of the predicted relative
      distance of the averaged vector from a rerun, its gradient-evaluation budget per collection (flagged
      ``budget_exhausted`` when it runs out first), the points a reference gets in the first pass, the
      forwards a reference's path warp takes (``certified_warp_points``, ``attribution/path_warp.py``:
      lattice points placed where F changes, each weighted by its inverse density; 0: the plain lattice), and
      ``certified_rerun``: the attribute stage estimates every question a second time with other shifts
      (``attribution.seed`` + 1, the same budget and tolerances) and reports the cosine and relative
      distance of the two vectors (App. B.4's vector criteria); twice the stage's gradient evaluations.
    max_grad_evals: the most gradient evaluations one question may take, all collections, as
      :meth:`gradient_budget` counts them (references x path pieces x points for IG; a setting above it is
      refused when the config is checked, with ``data.max_tokens`` bounding the pieces, and again when the
      stage starts, with the prompts' own lengths).
    path: ``straight`` (the paper's, Eq. 3 and 5) or ``blocks``: from the reference to the input one block of
      ``path_block`` positions at a time, left to right, through real token sequences (``paths.py``; the
      quadrature estimators ``ig`` and ``kronrod``, token references ``train`` and ``aligned``).
    eval_batch_size: prompts per no-grad call when evaluating widths of references.
    reuse_prefix: run the prompt prefix that every reference of a plan shares with the input once and
      only the rest per gradient sample (``attribution.prefix``; same results to rounding).
    merge_lora: explain a LoRA-adapted classifier with its adapters merged into the base weights
      (W + s B A in one matrix, peft's ``merge_and_unload``): the same function to the rounding of the
      weights' dtype, and on an H100 2-2.5x fewer milliseconds per half-precision gradient sample than
      with the adapters beside the weights (BENCHMARKS.md, GPU section). Used by every stage that
      computes widths to explain or mask them (attribute and its variants, mask_eval, checks, ``xurs
      explain``); ``predict`` keeps the adapters as trained.
    on_nonfinite: a question with inf/NaN widths or gradients is ``report``-ed (``nonfinite.json`` with
      its reference ids, no row), ``raise``-d, or ``retry``-ed once in float32 (half precision runs;
      reported if it fails again).
    """

    method: str = "eg"
    replacement: str = "zero"
    span_tokens: int = 16
    layer_ig_steps: int = 32
    sequential_ig_steps: int = 16
    reduction: str = "own"
    reference: str = "train"
    reference_alignment: str = "position"
    result_filter: str = "all"
    route: str = "direct"
    target_fn: str = "width"  # the function explained: width (the paper's), entropy or betp (Sec. 7)
    target: str = "predicted"
    split: str = "test"
    max_questions: int = 0
    record_ids: list[str] = field(default_factory=list)
    n_collections: int = 1
    refs_per_collection: int = 256
    reference_order: str = "first"
    reference_hash_seed: int = 20260804
    n_samples: int = 512
    samples_per_call: int = 8
    ig_quadrature: str = "gausslegendre"
    ig_points: int = 64
    ig_adaptive: bool = False
    ig_tolerance: float = 0.01
    ig_refine_factor: int = 4
    ig_max_points: int = 2048
    kronrod_tolerance: float = 0.01
    kronrod_max_evals: int = 8192
    kronrod_intervals: int = 1
    kronrod_stop: str = "bound"
    kronrod_lead: str = "stop"
    kronrod_rule: str = "k15"
    certified_tolerance: float = 0.01
    certified_vector_tolerance: float = 0.05
    certified_max_evals: int = 2048
    certified_first_nodes: int = 2
    certified_warp_points: int = 0
    certified_rerun: bool = False
    max_grad_evals: int = 131072
    path: str = "straight"
    path_block: int = 16
    precision: str = "float32"
    seed: int = 11
    eval_batch_size: int = 16
    reuse_prefix: bool = True
    merge_lora: bool = True
    device: str = "auto"
    on_nonfinite: str = "report"
    progress: bool = True

    def __post_init__(self) -> None:
        self._check_choices()
        self._check_method_keys()
        self._check_blocks()
        self._check_counts()
        self._check_quadrature()
        self._check_budget()

    def _check_choices(self) -> None:
        """Each named setting is one of its allowed values, and the pairs that exclude each other."""
        _one_of("method", self.method, METHODS)
        _one_of("reference", self.reference, REFERENCE_KINDS)
        _one_of("reference_alignment", self.reference_alignment, REFERENCE_ALIGNMENTS)
        if self.reference_alignment != "position" and self.reference != "train":
            raise ValueError(
                f"attribution.reference_alignment={self.reference_alignment!r} fits training prompts to the "
                f"question: it needs reference='train' (got {self.reference!r})"
            )
        _one_of("result_filter", self.result_filter, RESULT_FILTERS)
        _one_of("route", self.route, ROUTES)
        _one_of("target_fn", self.target_fn, TARGET_NAMES)
        if self.route == "answer_set" and self.target_fn != "width":
            raise ValueError(
                f"attribution.route='answer_set' decomposes the width only, not target_fn={self.target_fn!r}"
            )
        _one_of("target", self.target, TARGET_RULES)
        _one_of("split", self.split, ("train", "dev", "test"))
        _one_of("reference_order", self.reference_order, REFERENCE_ORDERS)
        _one_of("ig_quadrature", self.ig_quadrature, QUADRATURES)
        _one_of("kronrod_stop", self.kronrod_stop, STOP_RULES)
        _one_of("kronrod_lead", self.kronrod_lead, LEAD_RULES)
        _one_of("kronrod_rule", self.kronrod_rule, INTERVAL_RULES)
        _one_of("precision", self.precision, PRECISIONS)
        _one_of("path", self.path, PATHS)
        _at_least("path_block", self.path_block, 1)

    def _check_method_keys(self) -> None:
        """A token method's own keys, refused by name under a method that does not read them; the paper's
        routes and paths need a path method."""
        _one_of("replacement", self.replacement, REPLACEMENTS)
        _at_least("span_tokens", self.span_tokens, 1)
        _at_least("layer_ig_steps", self.layer_ig_steps, 1)
        _at_least("sequential_ig_steps", self.sequential_ig_steps, 1)
        _one_of("reduction", self.reduction, REDUCTIONS)
        defaults = AttributionConfig.__dataclass_fields__
        for key, readers in METHOD_KEYS.items():
            if self.method not in readers and getattr(self, key) != defaults[key].default:
                raise ValueError(
                    f"attribution.{key}={getattr(self, key)!r} is a key of {' / '.join(readers)}, not of "
                    f"attribution.method={self.method!r}"
                )
        if self.method in TOKEN_METHODS and self.route != "direct":
            raise ValueError(
                f"attribution.route={self.route!r} decomposes the paper estimators' gradients: "
                f"attribution.method={self.method!r} needs route='direct'"
            )
        if self.reads_one_reference and self.reference == "aligned":
            raise ValueError(
                f"attribution.method={self.method!r} reads one reference: attribution.reference must be "
                "'train' or 'zero'"
            )

    def _check_blocks(self) -> None:
        """Block paths need a quadrature estimator and token references."""
        if self.path == "blocks":
            needs = []
            if self.method not in ("ig", "kronrod"):
                needs.append(
                    f"a quadrature estimator (attribution.method ig or kronrod, got {self.method!r})"
                )
            if self.reference == "zero":
                needs.append(
                    f"token references (attribution.reference train or aligned, got {self.reference!r})"
                )
            if needs:
                raise ValueError(f"attribution.path='blocks' needs {' and '.join(needs)}")

    def _check_counts(self) -> None:
        """Devices, policies, seeds and the counts of questions, collections, references and samples."""
        _one_of("device", self.device, DEVICES)
        _one_of("on_nonfinite", self.on_nonfinite, NONFINITE_POLICIES)
        _at_least("max_questions", self.max_questions, 0)
        for key in ("seed", "reference_hash_seed"):
            if not 0 <= getattr(self, key) < 2**32:
                raise ValueError(f"attribution.{key}={getattr(self, key)}: must be in [0, 2**32 - 1]")
        for key in ("n_collections", "refs_per_collection", "n_samples", "samples_per_call"):
            _at_least(key, getattr(self, key), 1)
        _at_least("eval_batch_size", self.eval_batch_size, 1)

    @property
    def kronrod_first_pass(self) -> int:
        """Gradient evaluations of kronrod's first pass (:func:`kronrod_first_pass`)."""
        return kronrod_first_pass(self.kronrod_rule, self.kronrod_intervals, self.refs_per_collection)

    def _check_quadrature(self) -> None:
        """IG and Gauss-Kronrod points, refinement, tolerances and the kronrod first pass."""
        _at_least("ig_points", self.ig_points, 2 if self.ig_quadrature != "gausslegendre" else 1)
        _at_least("ig_refine_factor", self.ig_refine_factor, 2)
        if self.ig_max_points < self.ig_points:
            raise ValueError(
                f"attribution.ig_max_points={self.ig_max_points}: must be >= ig_points={self.ig_points}"
            )
        _tolerance("kronrod_tolerance", self.kronrod_tolerance)
        _at_least("kronrod_intervals", self.kronrod_intervals, 1)
        _at_least("kronrod_max_evals", self.kronrod_max_evals, 1)
        if self.method == "kronrod" and self.kronrod_rule == "trapezoid" and self.path != "straight":
            raise ValueError(
                f"attribution.kronrod_rule='trapezoid' reads F along straight paths, not "
                f"attribution.path={self.path!r}: use path='straight' or kronrod_rule='k15'"
            )
        if self.method == "kronrod" and self.kronrod_max_evals < self.kronrod_first_pass:
            nodes = "15 x kronrod_intervals" if self.kronrod_rule == "k15" else "(kronrod_intervals + 1)"
            raise ValueError(
                f"attribution.kronrod_max_evals={self.kronrod_max_evals}: must be >= the first pass, {nodes} "
                f"x refs_per_collection = {self.kronrod_first_pass}"
            )
        _tolerance("ig_tolerance", self.ig_tolerance)
        self._check_certified()

    def _check_certified(self) -> None:
        """The ``certified`` keys: tolerances, the first pass (a power of 2) within the budget."""
        check_certified(
            self.certified_tolerance,
            self.certified_vector_tolerance,
            self.certified_first_nodes,
            self.certified_warp_points,
        )
        _at_least("certified_max_evals", self.certified_max_evals, 1)
        first_pass = self.certified_first_nodes * self.refs_per_collection
        if self.method == "certified" and self.certified_max_evals < first_pass:
            raise ValueError(
                f"attribution.certified_max_evals={self.certified_max_evals}: must be >= the first pass, "
                f"certified_first_nodes x refs_per_collection = {first_pass}"
            )

    def _check_budget(self) -> None:
        """One reference for zero/aligned references, the gradient budget, unique record ids."""
        if self.reference in ("zero", "aligned") and (self.n_collections, self.refs_per_collection) != (1, 1):
            raise ValueError(
                f"attribution.reference={self.reference!r} has exactly one reference per question: set "
                f"n_collections=1 and refs_per_collection=1 (got {self.n_collections}, "
                f"{self.refs_per_collection})"
            )
        _at_least("max_grad_evals", self.max_grad_evals, 1)
        for key in ("max_grad_evals", *BUDGET_KEYS):
            if getattr(self, key) > MAX_SAMPLES_PER_QUESTION:
                raise ValueError(
                    f"attribution.{key}={getattr(self, key)}: must be <= {MAX_SAMPLES_PER_QUESTION} (2**22: "
                    "sampling plans are held in memory, and that many already take hours per question)"
                )
        budget = self.gradient_budget()
        if budget.per_question > MAX_SAMPLES_PER_QUESTION:
            raise ValueError(
                f"attribution.{budget.keys}: {budget.count} = {budget.per_question} gradient samples per "
                f"question, above the limit of {MAX_SAMPLES_PER_QUESTION} (2**22: sampling plans are held in "
                "memory, and that many already take hours per question)"
            )
        if len(set(self.record_ids)) != len(self.record_ids):
            raise ValueError(f"attribution.record_ids: duplicates in {self.record_ids}")

    def ignored_keys(self) -> dict[str, Any]:
        """The keys set away from their defaults that ``method`` never reads (another estimator's,
        :data:`ESTIMATOR_KEYS`), key -> value: named by ``xurs check`` and ``xurs params``, left out of
        what the stages running this method list, hash and stamp."""
        defaults = AttributionConfig.__dataclass_fields__
        return {
            key: getattr(self, key)
            for key in unread_keys(self.method)
            if getattr(self, key) != defaults[key].default
        }

    def ignored_note(self) -> str:
        """One line naming :meth:`ignored_keys` (``""`` when there are none)."""
        ignored = self.ignored_keys()
        if not ignored:
            return ""
        named = [f"attribution.{k}={v!r} ({'/'.join(ESTIMATOR_KEYS[k])})" for k, v in ignored.items()]
        return f"ignored: {', '.join(named)}: attribution.method={self.method!r} never reads them"

    @property
    def reads_one_reference(self) -> bool:
        """Does a token method read one reference: ``layer_ig``, or occlusion/Shapley replacing rows by it."""
        replaced = self.method in METHOD_KEYS["replacement"] and self.replacement == "reference"
        return self.method == "layer_ig" or replaced

    @property
    def token_reduction(self) -> str:
        """The reduction over the hidden dimension a gradient method's magnitudes use (``l2`` or
        ``abs_sum``): ``attribution.reduction``, or the method's own where it is ``own``."""
        return OWN_REDUCTION[self.method] if self.reduction == "own" else self.reduction

    @property
    def reads_training_references(self) -> bool:
        """Does the method read training prompts: the paper's estimators with ``reference='train'``, and a
        token method that reads one reference."""
        return self.reference == "train" and (self.method in PATH_METHODS or self.reads_one_reference)

    @property
    def pool_shape(self) -> tuple[int, int]:
        """(references per collection, collections) of the training pool: the configured ones for the paper's
        estimators, the first reference alone for a token method (the first of the same ordering)."""
        return (self.refs_per_collection, self.n_collections) if self.method in PATH_METHODS else (1, 1)

    def pieces_per_reference(self, tokens: int) -> int:
        """Most pieces of one reference's path to a prompt of ``tokens`` positions: 1 on the straight path,
        one per block of ``path_block`` positions on block paths (blocks where the reference already
        equals the prompt are skipped, so this bounds the count)."""
        if self.method == "sequential_ig":  # one path per token
            return max(1, int(tokens))
        return 1 if self.path == "straight" else max(1, -(-int(tokens) // self.path_block))

    def gradient_budget(self, pieces: int = 1) -> GradientBudget:
        """The most gradient evaluations of one question whose reference paths have ``pieces`` pieces each
        (:meth:`pieces_per_reference`), and how they are counted. EG: ``n_samples`` per collection (one
        point per straight path). IG: references x pieces x points, the points of fixed IG ``ig_points``,
        of adaptive IG every level of its schedule (``ig_points`` x ``ig_refine_factor``^k up to
        ``ig_max_points``, each level recomputed). kronrod: ``kronrod_max_evals`` per collection, shared by
        all pieces (it usually stops earlier); certified: ``certified_max_evals`` per collection likewise.
        Validation (with ``data.max_tokens``), the stage start and the progress bar (with the prompts'
        lengths) and ``xurs plan`` all count with it."""
        if self.method in TOKEN_METHODS:
            if self.method == "sequential_ig":
                per = pieces * self.sequential_ig_steps
                count = f"{pieces} token(s) x {self.sequential_ig_steps} point(s)"
                return GradientBudget(per, per, count, "prompt tokens x sequential_ig_steps")
            per = {"grad_l2": 1, "grad_x_input": 1, "layer_ig": self.layer_ig_steps}.get(self.method, 0)
            return GradientBudget(per, per, f"{per} gradient(s) of {self.method}", "layer_ig_steps")
        collections = f"{self.n_collections} collection(s) x "
        if self.method == "eg":
            per, count, keys = self.n_samples, f"{self.n_samples} sample(s)", "n_samples"
        elif self.method == "kronrod":
            per, count, keys = self.kronrod_max_evals, f"{self.kronrod_max_evals}", "kronrod_max_evals"
        elif self.method == "certified":
            per, count, keys = self.certified_max_evals, f"{self.certified_max_evals}", "certified_max_evals"
        else:
            levels, n = [self.ig_points], self.ig_points
            while self.ig_adaptive and n < self.ig_max_points:
                n = min(n * self.ig_refine_factor, self.ig_max_points)
                levels.append(n)
            per = self.refs_per_collection * pieces * sum(levels)
            points = "+".join(map(str, levels))
            count = f"{self.refs_per_collection} reference(s) x {pieces} piece(s) x {points} point(s)"
            keys = (
                "refs_per_collection x "
                + ("path pieces x " if self.path == "blocks" else "")
                + ("ig_points ... ig_max_points" if self.ig_adaptive else "ig_points")
            )
        return GradientBudget(per, self.n_collections * per, collections + count, keys)


@dataclass(frozen=True)
class GradientBudget:
    """The most gradient evaluations of one question: ``per_collection`` and ``per_question`` (all
    collections); ``count`` says how they were counted, ``keys`` the settings that set them."""

    per_collection: int
    per_question: int
    count: str
    keys: str


_LOWER = {
    "eg": "lower n_samples or n_collections",
    "ig": "lower ig_points (ig_max_points), refs_per_collection or n_collections",
    "kronrod": "lower kronrod_max_evals or n_collections",
    "certified": "lower certified_max_evals or n_collections",
    "layer_ig": "lower layer_ig_steps",
    "sequential_ig": "lower sequential_ig_steps or data.max_tokens",
}


def check_gradient_budget(cfg: AttributionConfig, tokens: int, where: str) -> GradientBudget:
    """Refuse a setting whose question may take more than ``attribution.max_grad_evals`` gradient
    evaluations on prompts of up to ``tokens`` positions (``where`` says where that length comes from:
    ``data.max_tokens`` at validation, the longest prompt at the stage start); return the budget."""
    pieces = cfg.pieces_per_reference(tokens)
    budget = cfg.gradient_budget(pieces)
    if budget.per_question > cfg.max_grad_evals:
        blocks = (
            f" (path_block={cfg.path_block} on prompts of up to {tokens} tokens, {where})"
            if cfg.path == "blocks"
            else ""
        )
        raise ValueError(
            f"attribution.max_grad_evals={cfg.max_grad_evals}: {cfg.method} needs up to {budget.count}"
            f"{blocks} = {budget.per_question} gradient evaluations per question; {_LOWER[cfg.method]}"
            f"{', raise path_block' if cfg.path == 'blocks' else ''}, or raise attribution.max_grad_evals"
        )
    return budget
