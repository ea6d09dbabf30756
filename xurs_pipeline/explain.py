"""The library side of ``xurs explain``: one question -> width attribution of one answer, printable and HTML.

    expl = explain("data/train/classifier", record_id="family003_case01_resolved",
                   prompts_path="data/prepared/prompts.parquet", config=AttributionConfig(n_samples=64))
    print(expl.format_top(10)); expl.to_html("explain.html"); expl.save("explain.json")
    occl = explain("data/train/classifier", record_id=..., prompts_path=..., method="occlusion_token")

Any method of ``attribution/methods/`` (``method=`` or ``config.method``); each reports its cost in forwards
and gradient evaluations, and its completeness residual where it has one (NaN otherwise).

A question is a record of the prepared data or inline text with four options (tokenised and labelled by
``xurs_pipeline.data`` exactly as the ``prepare`` stage does). Training references need the prepared data.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from xurs_pipeline.attribution.config import (
    METHOD_KEYS,
    PATH_METHODS,
    AttributionConfig,
    describe_references,
    with_method,
)
from xurs_pipeline.attribution.endpoints import prompt_of
from xurs_pipeline.attribution.inputs import (
    AttributionInputError,
    natural_pool,
    question_budgets,
    select_questions,
)
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.methods.token_question import span_width
from xurs_pipeline.attribution.model import (
    DTYPES,
    WidthModel,
    chosen_device,
    frozen,
    model_device,
    set_precision,
)
from xurs_pipeline.attribution.question import NonFiniteError
from xurs_pipeline.credal import belief, check_masses, credal_width, pignistic, plausibility
from xurs_pipeline.data.schema import OPTION_LETTERS as LETTERS
from xurs_pipeline.io import Provenance, read_json, write_json
from xurs_pipeline.reporting.html import (
    RESIDUAL_CHECK,
    TOP_TOKENS,
    CheckRow,
    ExplanationView,
    ReportProvenance,
    write_explanation,
)
from xurs_pipeline.reporting.html_explanation import top_tokens
from xurs_pipeline.reporting.html_view import MethodScores
from xurs_pipeline.reporting.method_findings import finding_label

EXPLANATION = Provenance("explanation", 2)
NOT_EVERY_METHOD = ("residual", "error_bound", "roughness", "width_difference")  # NaN where a method has none
INLINE_ID = "inline"
# what an explanation takes from its attribution row (attribution.records.TargetAttribution) as it is
ROW_FIELDS = (
    "target",
    "predicted",
    "token_signed",
    "token_magnitude",
    "width_input",
    "width_difference",
    "signed_sum",
    "residual",
    "method",
    "reference",
    "precision",
    "grad_evals",
    "seed",
    "error_bound",
    "budget_exhausted",
    "roughness",
    "path",
    "forward_evals",
)


@dataclass(frozen=True)
class TokenScore:
    position: int
    token: str
    section: str
    magnitude: float
    signed: float


@dataclass
class Explanation:
    """Width attribution of one answer of one question; per-token lists have the prompt's length L."""

    record_id: str
    prompt: str
    options: list[str]
    tokens: list[str]
    sections: list[str]
    eligible: list[bool]
    target: int
    predicted: int
    belief: list[float]  # Bel({k}) per option, Eq. 1
    plausibility: list[float]  # Pl({k}) per option, Eq. 1
    width: list[float]  # W_k, Eq. 2
    betp: list[float]  # BetP(k), Eq. 2
    masses: list[float]  # m(S), 15 sets in FOCAL_SETS order
    token_signed: list[float]
    token_magnitude: list[float]
    width_input: float
    width_difference: float
    signed_sum: float
    residual: float  # Eq. 9
    method: str
    reference: str
    precision: str
    grad_evals: int
    seed: int
    error_bound: float  # the estimator's own bound on R (attribution/estimators.py)
    budget_exhausted: bool  # the budget ran out before the estimator's tolerance
    roughness: float  # total variation of F along the paths / |F(X) - F(B)| (1: monotone paths)
    forward_evals: int = 0  # forward passes the method took (the input's own included)

    correct: int | None = None  # the correct option, if known (inline questions: --answer)
    path: str = "straight"  # the path from each reference to the input (attribution/paths.py)
    alignment: str = "position"  # how training prompts were fitted to the question (references.py)
    experiment: str = ""
    model: str = ""
    span_tokens: int = 0  # positions per span of a span method (token_question.span_width), else 0

    def top_tokens(self, k: int = 10, eligible_only: bool = True) -> list[TokenScore]:
        """The ``k`` tokens with the largest magnitude a_i (eligible tokens only by default, Sec. 5.2)."""
        order = sorted(range(len(self.tokens)), key=lambda i: (-self.token_magnitude[i], i))
        keep = [i for i in order if self.eligible[i] or not eligible_only][:k]
        return [
            TokenScore(i, self.tokens[i], self.sections[i], self.token_magnitude[i], self.token_signed[i])
            for i in keep
        ]

    def residual_verdict(self, residual_max: float | None) -> str:
        """``pass``/``FAIL`` of the completeness check R <= ``residual_max`` (the report's rule), or ``—``."""
        if residual_max is None or not self.has_residual:
            return "—"
        return "pass" if self.residual <= residual_max else "FAIL"

    @property
    def has_residual(self) -> bool:
        """Does the method have a completeness residual (the paper's estimators, layer IG)?"""
        return math.isfinite(self.residual)

    def cost(self) -> str:
        """What the explanation took: ``<forwards> forwards, <gradients> gradient evaluations``."""
        return f"{self.forward_evals} forwards, {self.grad_evals} gradient evaluations"

    def format_top(self, k: int = 10, residual_max: float | None = None) -> str:
        """A printable summary: explained, predicted and correct answers, the explained answer's [Bel, Pl]
        and width, the residual R with its verdict, and the same top-k tokens as the HTML page."""
        c = self.target
        correct = LETTERS[self.correct] if self.correct is not None else "not given"
        rule = "argmax BetP" if c == self.predicted else "chosen with --explain"
        verdict = self.residual_verdict(residual_max)
        exhausted = ", BUDGET EXHAUSTED before the tolerance" if self.budget_exhausted else ""
        check = "" if residual_max is None else f": {verdict} (report threshold R <= {residual_max:g})"
        lines = [
            f"{self.record_id}: explained answer {LETTERS[c]} ({rule}); predicted {LETTERS[self.predicted]}; "
            f"correct {correct}",
            f"width W_{LETTERS[c]} = {self.width[c]:.4f} in [Bel, Pl] = [{self.belief[c]:.4f}, "
            f"{self.plausibility[c]:.4f}]",
            f"completeness residual R (Eq. 9) = {self.residual:.3g}{check}"
            if self.has_residual
            else f"completeness residual: none ({self.method} has no completeness rule)",
            self._method_line(exhausted),
            f"top {k} tokens by magnitude (as on the HTML page):",
            f"{'rank':>4} {'pos':>5} {'magnitude':>10} {'signed':>10}  {'section':<13} {'eligible':<8} token",
        ]
        for rank, t in enumerate(top_tokens(self.to_view(residual_max), k), start=1):
            lines.append(
                f"{rank:>4} {t.position:>5} {t.magnitude:>10.3e} {t.signed:>+10.3e}  "
                f"{t.section:<13} {'yes' if t.eligible else 'no':<8} {t.text!r}"
            )
        return "\n".join(lines)

    def _method_line(self, exhausted: str) -> str:
        if self.method not in PATH_METHODS:
            source = "" if self.reference == "none" else f" from the first {self.reference} reference"
            spans = f" over spans of {self.span_tokens} positions" if self.span_tokens else ""
            return f"method {self.method}{source}{spans}: {self.cost()}"
        references = describe_references(self.reference, self.alignment)
        return (
            f"references {references}; estimator {self.method} on {self.path} paths: error bound "
            f"{self.error_bound:.3g}, {self.cost()}{exhausted}; path roughness (total variation / net "
            f"change) {self.roughness:.3g}"
        )

    def to_view(self, residual_max: float | None = None, other: Explanation | None = None) -> ExplanationView:
        """The report's page model of this explanation (same page as the pipeline's HTML report); with
        ``residual_max`` the completeness check carries the report's threshold and verdict; with ``other``
        (another method's explanation of the same answer) both methods side by side."""
        return ExplanationView(
            record_id=self.record_id,
            question=self.prompt,
            options=tuple(self.options),
            tokens=tuple(self.tokens),
            signed=tuple(self.token_signed),
            magnitude=tuple(self.token_magnitude),
            sections=tuple(self.sections),
            eligible=tuple(self.eligible),
            explained=self.target,
            explained_rule="argmax BetP" if self.target == self.predicted else "chosen option",
            bel=tuple(self.belief),
            pl=tuple(self.plausibility),
            betp=tuple(self.betp),
            masses=tuple(self.masses),
            checks=self.checks(residual_max),
            token_scheme="plain",
            gold=self.correct,
            methods=() if other is None else (self.method_scores(), other.method_scores()),
            reference_width=self.width_input - self.width_difference,
            provenance=self.provenance(),
        )

    def checks(self, residual_max: float | None) -> tuple[CheckRow, ...]:
        """The page's completeness check (none without a residual), with the report's threshold and
        verdict when ``residual_max`` is given."""
        label = "Completeness residual R (Eq. 9)"
        if not self.has_residual:
            return ()
        if residual_max is None:
            return (CheckRow(RESIDUAL_CHECK, label, self.residual),)
        passed = self.residual <= residual_max
        return (CheckRow(RESIDUAL_CHECK, label, self.residual, residual_max, "<=", passed),)

    def provenance(self) -> ReportProvenance:
        """What the page says made it: the experiment, method and precision, references, samples, seed."""
        extra = (("seed", str(self.seed)),) + ((("model", self.model),) if self.model else ())
        return ReportProvenance(
            experiment=f"xurs explain ({self.experiment})" if self.experiment else "xurs explain",
            config_hash="",
            method=f"{self.method.upper()}, {self.precision}",
            references=describe_references(self.reference, self.alignment),
            samples=self.grad_evals,
            extra=extra,
        )

    def method_scores(self) -> MethodScores:
        """This explanation's magnitudes with its method's swap-control finding (a page's comparison)."""
        return MethodScores(self.method, finding_label(self.method), tuple(self.token_magnitude))

    def to_html(
        self,
        path: str | os.PathLike[str],
        top_k: int = TOP_TOKENS,
        residual_max: float | None = None,
        other: Explanation | None = None,
    ) -> Path:
        """Write the self-contained HTML page (token heatmaps, [Bel, Pl] intervals) atomically; with
        ``other``, the two methods side by side."""
        if other is not None and (other.record_id, other.target) != (self.record_id, self.target):
            raise ValueError(f"compare: {other.record_id} answer {other.target} is another explanation")
        return write_explanation(self.to_view(residual_max, other), path, top_k)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """The explanation as JSON; a value the method does not have (NaN: a token method's residual,
        bound, roughness) is written as null."""
        payload = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in asdict(self).items()}
        return write_json(payload, path, EXPLANATION)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Explanation:
        payload = read_json(path, EXPLANATION)
        values = {f.name: payload[f.name] for f in fields(cls) if f.name in payload}
        missing = {k: float("nan") for k in NOT_EVERY_METHOD if values.get(k, 0.0) is None}
        return cls(**{**values, **missing})


def inline_prompts(
    tokenizer: Any, question: str, options: list[str], answer: int | None, max_tokens: int
) -> pd.DataFrame:
    """A one-row prepared-prompts frame for inline text (formatting, sections, eligibility as ``prepare``)."""
    from xurs_pipeline.data.prepare import prepare_records
    from xurs_pipeline.data.records import QuestionRecord

    if len(options) != 4:
        raise AttributionInputError(f"explain: need exactly 4 options, got {len(options)}")
    record = QuestionRecord(INLINE_ID, "test", "medqa", question, tuple(options), answer or 0)  # type: ignore[arg-type]
    return prepare_records([record], tokenizer, max_tokens).frame


def _token_texts(row: pd.Series, tokenizer: Any) -> list[str]:
    pieces = tokenizer.convert_ids_to_tokens([int(i) for i in row["input_ids"]])
    return [
        row["prompt"][s:e] if e > s else piece
        for s, e, piece in zip(row["token_start"], row["token_end"], pieces, strict=True)
    ]


def _input_masses(model: WidthModel, input_ids: tuple[int, ...]) -> torch.Tensor:
    """The masses (1, 15) at the prompt, checked at the model's precision (that dtype's tolerance on
    |sum m - 1|), in float32 for the credal part, as the attribute stage does."""
    prompt = prompt_of(model, input_ids, model_device(model))  # type: ignore[arg-type]
    with torch.no_grad(), frozen(model):  # type: ignore[arg-type]
        native = model(prompt.embeds, prompt.attention_mask, prompt.position_ids).masses
    check_masses(native)
    return native.float()


def explain_row(
    model: WidthModel,
    tokenizer: Any,
    prompts: pd.DataFrame,
    record_id: str,
    config: AttributionConfig,
    option: int | None = None,
    max_positions: int | None = None,
) -> Explanation:
    """Explain ``record_id`` of ``prompts`` with ``config`` (``option`` overrides ``config.target``)."""
    if config.target == "all" and option is None:
        raise AttributionInputError("explain: attribution.target='all' gives four answers; pick one option")
    if option is not None and not 0 <= option < 4:
        raise AttributionInputError(f"explain: option {option} must be 0..3 (A..D)")
    cfg = AttributionConfig(**{**asdict(config), "record_ids": [record_id], "progress": False})
    (question,) = select_questions(prompts, cfg, max_positions)
    question_budgets([question], cfg)  # refused before any work if above attribution.max_grad_evals
    pool = natural_pool(model, prompts, cfg, max_positions)
    result = attribute_question(
        model, question, pool, cfg, tokenizer.pad_token_id, targets=None if option is None else (option,)
    )
    if result.failure is not None:
        raise NonFiniteError(result.failure.message())
    (row,) = result.rows
    masses = _input_masses(model, question.input_ids)
    record = prompts.set_index("record_id", drop=False).loc[record_id]
    fields_of_row = {k: getattr(row, k) for k in ROW_FIELDS}
    question_fields = _question_fields(record, tokenizer)
    answer = _credal_fields(masses)
    spans = span_width(cfg, len(row.token_signed)) if cfg.method in METHOD_KEYS["span_tokens"] else 0
    return Explanation(
        **question_fields, **answer, **fields_of_row, alignment=cfg.reference_alignment, span_tokens=spans
    )


def _question_fields(record: pd.Series, tokenizer: Any) -> dict[str, Any]:
    """The explanation's question: text, options, tokens with their sections and eligibility, the correct
    option."""
    return {
        "record_id": str(record["record_id"]),
        "prompt": str(record["prompt"]),
        "options": [str(o) for o in record["options"]],
        "tokens": _token_texts(record, tokenizer),
        "sections": [str(s) for s in record["sections"]],
        "eligible": [bool(v) for v in record["eligible"]],
        "correct": int(record["answer_idx"]),
    }


def _credal_fields(masses: torch.Tensor) -> dict[str, list[float]]:
    """Bel, Pl, W and BetP per option (Eq. 1, 2) and the 15 masses, from the prompt's masses (1, 15)."""
    return {
        "belief": belief(masses, validate=False)[0].tolist(),
        "plausibility": plausibility(masses, validate=False)[0].tolist(),
        "width": credal_width(masses, validate=False)[0].tolist(),
        "betp": pignistic(masses, validate=False)[0].tolist(),
        "masses": masses[0].tolist(),
    }


def with_settings(cfg: AttributionConfig, settings: dict[str, Any]) -> AttributionConfig:
    """``cfg`` with ``attribution.*`` keys changed (a new ``method`` first, :func:`with_method`), checked."""
    unknown = sorted(set(settings) - {f.name for f in fields(AttributionConfig)})
    if unknown:
        raise AttributionInputError(f"explain: {unknown[0]}: not an attribution.* key")
    base = with_method(cfg, settings["method"]) if "method" in settings else cfg
    return AttributionConfig(**{**asdict(base), **settings})


@dataclass(frozen=True)
class InlineQuestion:
    """A question given as text rather than a prepared record: its ``text``, four ``options`` and the
    correct one, ``answer`` (0..3; needed only for ``target='correct'``)."""

    text: str
    options: list[str]
    answer: int | None = None
    max_tokens: int = 512  # the prompt's token limit when it is prepared (data.max_tokens)


def explain(
    classifier_dir: str | os.PathLike[str],
    *,
    record_id: str | None = None,
    inline: InlineQuestion | None = None,
    prompts_path: str | os.PathLike[str] | None = None,
    config: AttributionConfig | None = None,
    option: int | None = None,
    **settings: Any,
) -> Explanation:
    """Load a trained classifier and explain one question (a prepared ``record_id``, or an ``inline`` one).

    ``settings``: ``attribution.*`` keys over ``config``, e.g. ``method='occlusion_token'`` (any of
    ``attribution.config.METHODS``; the keys only other methods read go back to their defaults) and that
    method's own keys; a key of another method, or no key at all, is refused by name. Training references
    (``config.reference='train'``, the default) come from ``prompts_path``; inline questions without
    prepared data can use ``reference='zero'``.
    """
    from xurs_pipeline.data.schema import read_prompts
    from xurs_pipeline.models.checkpoint import load_classifier

    cfg = config or AttributionConfig()
    if settings:
        cfg = with_settings(cfg, settings)
    if (record_id is None) == (inline is None):
        raise AttributionInputError(
            "explain: give either record_id (with prompts_path) or an inline question"
        )
    if cfg.target == "correct" and inline is not None and inline.answer is None:
        raise AttributionInputError("explain: target='correct' on an inline question needs answer=0..3")
    model, tokenizer = load_classifier(classifier_dir, merge_lora=cfg.merge_lora)
    model.to(device=chosen_device(cfg.device))
    set_precision(model, DTYPES[cfg.precision])
    max_positions = getattr(model.backbone.config, "max_position_embeddings", None)
    prepared = read_prompts(prompts_path) if prompts_path is not None else None
    if inline is not None:
        frame = inline_prompts(tokenizer, inline.text, list(inline.options), inline.answer, inline.max_tokens)
        train = prepared[prepared["split"] == "train"] if prepared is not None else frame.iloc[:0]
        prepared, record_id = pd.concat([train, frame], ignore_index=True), INLINE_ID
    elif prepared is None:
        raise AttributionInputError(f"explain: record_id={record_id!r} needs prompts_path (prepared data)")
    if cfg.reads_training_references and not (prepared["split"] == "train").any():
        raise AttributionInputError(
            "explain: attribution.reference='train' needs prompts_path with a train split"
        )
    result = explain_row(model, tokenizer, prepared, record_id, cfg, option, max_positions)
    return result if inline is None else replace(result, correct=inline.answer)
