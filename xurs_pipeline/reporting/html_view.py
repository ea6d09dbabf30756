"""Plain typed inputs of the HTML explanation pages (no artifact reading here).

One :class:`ExplanationView` holds everything one page shows about one explained question: its tokens
with signed and magnitude attributions of the selected answer's width (Eq. 3, 4), each option's
[Bel, Pl] interval and BetP (Eq. 1, 2), the 15 set masses, section shares (App. B.3), the checks that
apply to the question and the provenance of the numbers. The lead's wiring builds views from the
``predictions``, ``attributions`` and ``checks`` artifacts; the renderers only format them.

Views validate themselves: a wrong length, an unknown section, a non-finite value or an interval
outside [0, 1] raises ``ValueError`` naming the record, the field, the position and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xurs_pipeline.data.schema import OPTION_LETTERS, SECTION_NAMES

N_OPTIONS = len(OPTION_LETTERS)
N_MASSES = 2**N_OPTIONS - 1  # 15 non-empty subsets, credal.FOCAL_SETS order
HIDDEN_SECTIONS = ("padding",)  # never drawn (their count is reported)
GREYED_SECTIONS = ("special",)  # drawn grey, unshaded, left out of the colour scale
TOKEN_SCHEMES = ("auto", "byte_level", "metaspace", "plain")  # how token pieces spell text (html_tokens)
INTERVAL_TOL = 1e-6  # rounding allowed in Bel <= BetP <= Pl and in [0, 1]

# Check keys the index page reads (CheckRow.key); other keys are shown on the page only.
RESIDUAL_CHECK = "completeness_residual"
ADVANTAGE_CHECK = "zero_masking_advantage"


@dataclass(frozen=True)
class CheckRow:
    """One check applying to the question: value against threshold, with the verdict already decided.

    ``direction`` is ``"<="`` or ``">="`` (how the value must compare to the threshold) or ``""`` for an
    informational row without threshold; ``passed`` is None for such rows.
    """

    key: str
    label: str
    value: float
    threshold: float | None = None
    direction: str = ""
    passed: bool | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.direction not in ("<=", ">=", ""):
            raise ValueError(f"check {self.key!r}: direction {self.direction!r} must be '<=', '>=' or ''")
        if (self.threshold is None) != (self.direction == ""):
            raise ValueError(f"check {self.key!r}: give both threshold and direction, or neither")


@dataclass(frozen=True)
class Mark:
    """Prompt tokens to outline on the page, with what they are: the clue of a controlled record, or each
    cue of a two-cue record (``label`` says which). ``positions``: token indices into the prompt (seq,)."""

    label: str
    positions: tuple[int, ...]


@dataclass(frozen=True)
class ReportProvenance:
    """Where the numbers on a page come from."""

    experiment: str
    config_hash: str
    method: str  # e.g. "EG direct route (Eq. 3), GradientShap without noise"
    references: str  # e.g. "256 training prompts, padded/truncated to L"
    samples: int  # EG samples, IG points per reference, or kronrod's evaluation cap
    extra: tuple[tuple[str, str], ...] = ()  # further (name, value) rows: seed, precision, model, ...


def _where(record_id: str, name: str) -> str:
    return f"record {record_id!r}: {name}"


def _check_finite(record_id: str, name: str, values: Sequence[float]) -> None:
    for i, v in enumerate(values):
        if not math.isfinite(float(v)):
            raise ValueError(f"{_where(record_id, name)}[{i}] = {v} is not finite")


def _check_length(record_id: str, name: str, values: Sequence[object], n: int, what: str) -> None:
    if len(values) != n:
        raise ValueError(f"{_where(record_id, name)} has {len(values)} entries; expected {n} ({what})")


@dataclass(frozen=True)
class MethodScores:
    """One attribution method's token magnitudes (seq,) on the page's question, with its name and what the
    swap control found for it (``reporting/method_findings.py``)."""

    method: str
    finding: str
    magnitude: tuple[float, ...]


@dataclass(frozen=True)
class ExplanationView:
    """Everything one explanation page shows. Token fields are (seq,); option fields (4,); masses (15,).

    tokens: raw tokenizer pieces (``convert_ids_to_tokens``: byte-level ``'Ġ'``/``'Ċ'`` or ``'▁'``
        markers are turned into spaces and newlines for display) or already decoded pieces.
    signed: per-token signed attribution sum_j e_ij of the explained width (Eq. 3 or 4).
    magnitude: per-token magnitude a_i = (sum_j e_ij^2)^(1/2) (Sec. 3.4), nonnegative.
    sections: one of ``SECTION_NAMES`` per token; eligible: zero-masking eligibility (Sec. 5.2).
    explained: index c of the explained answer; explained_rule: how c was chosen.
    bel, pl, betp: Bel({k}), Pl({k}) (Eq. 1) and BetP(k) (Eq. 2) per option, from ``credal``.
    masses: m(S) for the 15 sets in ``credal.FOCAL_SETS`` order.
    section_shares: (section, share of total magnitude) pairs (App. B.3); need not add to one.
    reference_width: mean width of c over the prepared references (the other end of Eq. 9), if known.
    gold: index of the correct answer, if known.
    mass_threshold: masses below it are left out of the mass table (their count and total are shown).
    title: page heading (default: a question about the explained answer and the record id).
    token_scheme: how ``tokens`` spell text, one of ``TOKEN_SCHEMES`` ("auto" guesses from the pieces).
    marks: spans of tokens to outline in the heatmaps (the clue; both cues of a two-cue record), each
        with its label; distinct labels, positions inside the prompt.
    methods: none, or two methods side by side (the page's own first, then another on the same question),
        each with its magnitudes (one per token) and the swap control's finding.
    """

    record_id: str
    question: str
    options: tuple[str, ...]
    tokens: tuple[str, ...]
    signed: tuple[float, ...]
    magnitude: tuple[float, ...]
    sections: tuple[str, ...]
    eligible: tuple[bool, ...]
    explained: int
    explained_rule: str
    bel: tuple[float, ...]
    pl: tuple[float, ...]
    betp: tuple[float, ...]
    masses: tuple[float, ...]
    provenance: ReportProvenance
    section_shares: tuple[tuple[str, float], ...] = ()
    checks: tuple[CheckRow, ...] = ()
    reference_width: float | None = None
    gold: int | None = None
    mass_threshold: float = 1e-3
    title: str = ""
    token_scheme: str = "auto"
    marks: tuple[Mark, ...] = ()
    methods: tuple[MethodScores, ...] = ()

    def __post_init__(self) -> None:
        rid = self.record_id
        n = len(self.tokens)
        if n == 0:
            raise ValueError(f"{_where(rid, 'tokens')} is empty; a page needs at least one token")
        for name in ("signed", "magnitude", "sections", "eligible"):
            _check_length(rid, name, getattr(self, name), n, "one per token")
        for name in ("options", "bel", "pl", "betp"):
            _check_length(rid, name, getattr(self, name), N_OPTIONS, "one per option A..D")
        _check_length(rid, "masses", self.masses, N_MASSES, "one per set in credal.FOCAL_SETS order")
        for name in ("signed", "magnitude", "bel", "pl", "betp", "masses"):
            _check_finite(rid, name, getattr(self, name))
        if len(self.methods) not in (0, 2):
            raise ValueError(f"{_where(rid, 'methods')} holds {len(self.methods)}; a comparison shows two")
        for scores in self.methods:
            _check_length(rid, f"methods[{scores.method}].magnitude", scores.magnitude, n, "one per token")
            _check_finite(rid, f"methods[{scores.method}].magnitude", scores.magnitude)
        for i, section in enumerate(self.sections):
            if section not in SECTION_NAMES:
                raise ValueError(f"{_where(rid, 'sections')}[{i}] = {section!r}; allowed: {SECTION_NAMES}")
        for i, a in enumerate(self.magnitude):
            if a < 0:
                raise ValueError(f"{_where(rid, 'magnitude')}[{i}] = {a}; token magnitudes are >= 0")
        for k in range(N_OPTIONS):
            lo, hi, mid = self.bel[k], self.pl[k], self.betp[k]
            ordered = lo <= mid + INTERVAL_TOL and mid <= hi + INTERVAL_TOL
            if not (ordered and lo >= -INTERVAL_TOL and hi <= 1 + INTERVAL_TOL):
                raise ValueError(
                    f"{_where(rid, 'bel/betp/pl')} of option {OPTION_LETTERS[k]} = {lo}, {mid}, {hi}; "
                    "need 0 <= Bel <= BetP <= Pl <= 1"
                )
        for i, m in enumerate(self.masses):
            if m < -INTERVAL_TOL:
                raise ValueError(f"{_where(rid, 'masses')}[{i}] = {m}; masses are >= 0")
        if not 0 <= self.explained < N_OPTIONS:
            raise ValueError(f"{_where(rid, 'explained')} = {self.explained}; must be 0..3")
        if self.gold is not None and not 0 <= self.gold < N_OPTIONS:
            raise ValueError(f"{_where(rid, 'gold')} = {self.gold}; must be 0..3 or None")
        if self.token_scheme not in TOKEN_SCHEMES:
            raise ValueError(
                f"{_where(rid, 'token_scheme')} = {self.token_scheme!r}; allowed: {TOKEN_SCHEMES}"
            )
        labels = [mark.label for mark in self.marks]
        if len(set(labels)) != len(labels) or not all(label.strip() for label in labels):
            raise ValueError(f"{_where(rid, 'marks')} labels {labels}; need distinct, non-empty labels")
        for mark in self.marks:
            outside = [p for p in mark.positions if not 0 <= p < n]
            if outside:
                raise ValueError(
                    f"{_where(rid, 'marks')} {mark.label!r} has positions {outside} outside the prompt "
                    f"(0..{n - 1})"
                )
        if not 0 <= self.mass_threshold < 1:
            raise ValueError(f"{_where(rid, 'mass_threshold')} = {self.mass_threshold}; must be in [0, 1)")
        for name, share in self.section_shares:
            if name not in SECTION_NAMES or not 0 <= share <= 1 + INTERVAL_TOL:
                raise ValueError(
                    f"{_where(rid, 'section_shares')} has ({name!r}, {share}); need a section name and "
                    "a share in [0, 1]"
                )

    @property
    def letter(self) -> str:
        """Letter of the explained answer c."""
        return OPTION_LETTERS[self.explained]

    @property
    def width(self) -> float:
        """W_c = Pl({c}) - Bel({c}) (Eq. 2) of the explained answer, from the given Bel and Pl."""
        return self.pl[self.explained] - self.bel[self.explained]

    def check(self, key: str) -> CheckRow | None:
        """The check with this key, or None."""
        return next((row for row in self.checks if row.key == key), None)
