"""Views for the HTML report tests and the screenshot check (a small hand-made one and a MedQA-like one),
and a small HTML tree parser (stdlib ``html.parser``) for the tests.

The MedQA-like question is written for these tests (not taken from MedQA). Its tokens, sections and
eligibility come from the project's own prompt formatting and labelling (``data.tokenize``) with any
fast tokenizer; masses are fixed, and Bel, Pl and BetP are computed from them by ``credal``; the
attributions are made up (seeded) with a few clue tokens standing out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from typing import Any

import numpy as np
import torch

from xurs_pipeline.credal import belief, pignistic, plausibility
from xurs_pipeline.credal.focal_sets import FOCAL_INDEX
from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.tokenize import tokenize_records
from xurs_pipeline.evaluation.sections import SHARE_SECTIONS, section_shares
from xurs_pipeline.reporting.front_page import FrontPage
from xurs_pipeline.reporting.html import CheckRow, ExplanationView, ReportProvenance

PROVENANCE = ReportProvenance(
    experiment="smoke",
    config_hash="0123456789abcdef",
    method="EG, direct route (Eq. 3)",
    references="4 training prompts, padded/truncated",
    samples=16,
    extra=(("seed", "17"), ("precision", "float32")),
)

QUESTION = (
    "A 34-year-old woman comes to the emergency department because of fever, productive cough, and "
    "right-sided pleuritic chest pain for 3 days. She has a history of intravenous drug use. Her "
    "temperature is 39.2°C (102.6°F), pulse is 112/min, and respirations are 24/min. Auscultation shows a "
    "new holosystolic murmur best heard at the left lower sternal border. A chest x-ray shows multiple "
    "peripheral nodular opacities, some with cavitation. Which of the following is the most likely "
    "causal organism?"
)
OPTIONS = (
    "Streptococcus viridans",
    "Staphylococcus aureus",
    "Enterococcus faecalis",
    "Pseudomonas aeruginosa",
)
CLUES = {"drug": 1.0, "murmur": 0.8, "cavitation": 0.6, "nodular": -0.5, "viridans": -0.7, "aureus": 0.9}


def bare_front(**fields: Any) -> FrontPage:
    """A front page with nothing measured (no accuracy, effects, checks, tables or plots) but ``fields``."""
    empty = dict(accuracy=(), effects=(), checks=(), tables=(), skipped=(), plots=())
    names = dict(experiment="e", model="m", data="d", config_hash="h")
    return FrontPage(**{**names, **empty, **fields})


def masses_of(pairs: dict[tuple[int, ...], float]) -> tuple[float, ...]:
    """A 15-vector in ``FOCAL_SETS`` order from {subset: mass}; the full set takes the rest."""
    m = [0.0] * len(FOCAL_INDEX)
    for subset, mass in pairs.items():
        m[FOCAL_INDEX[subset]] = mass
    m[FOCAL_INDEX[(0, 1, 2, 3)]] += 1.0 - sum(m)
    return tuple(m)


def measures(masses: tuple[float, ...]) -> tuple[tuple[float, ...], ...]:
    """(Bel, Pl, BetP) per option, each (4,), from ``credal`` (Eq. 1, 2)."""
    t = torch.tensor(masses, dtype=torch.float64)
    return tuple(tuple(f(t).tolist()) for f in (belief, plausibility, pignistic))


PAPER_MASSES = masses_of({(1,): 0.1, (2,): 0.1, (1, 2): 0.8})  # Sec. 1: C has [0.1, 0.9], width 0.8


def small_view(**changes: Any) -> ExplanationView:
    """Eleven tokens, one special, two padding, one ``<script>`` token; the paper's Sec. 1 masses."""
    tokens = ("<pad>", "<pad>", "<|bos|>", "Question", ":", "Ġ<script>", "Ġfever", "Ċ", "A", ".", "Ġcough")
    sections = (
        "padding",
        "padding",
        "special",
        "template",
        "template",
        "question",
        "question",
        "template",
        "option_label",
        "template",
        "option_A",
    )
    bel, pl, betp = measures(PAPER_MASSES)
    base = ExplanationView(
        record_id="rec-1",
        question="<script> fever",
        options=("cough", "fever & rash", "<b>C</b>", "none"),
        tokens=tokens,
        signed=(0.0, 0.0, 0.0, 0.01, -0.002, -0.05, 0.2, 0.0, 0.03, 0.0, -0.1),
        magnitude=(0.0, 0.0, 0.0, 0.02, 0.004, 0.06, 0.25, 0.001, 0.05, 0.001, 0.12),
        sections=sections,
        eligible=tuple(s in ("question", "option_A") for s in sections),
        explained=2,
        explained_rule="argmax BetP on the original prompt (Sec. 3.1)",
        bel=bel,
        pl=pl,
        betp=betp,
        masses=PAPER_MASSES,
        provenance=PROVENANCE,
        section_shares=(("question", 0.5), ("option_A", 0.2)),
        checks=(
            CheckRow("completeness_residual", "Completeness residual R (Eq. 9)", 0.004, 0.01, "<=", True),
            CheckRow("zero_masking_advantage", "Zero-masking advantage A(x) (Eq. 8)", -0.02, None, "", None),
        ),
        reference_width=0.7,
        gold=1,
    )
    return replace(base, **changes)


def medqa_like_view(tokenizer: Any, seed: int = 0) -> ExplanationView:
    """A realistic page: the MedQA-like question above as the project prompts and labels it."""
    record = QuestionRecord("medqa-demo-0001", "test", "medqa", QUESTION, OPTIONS, 1)
    item = tokenize_records([record], tokenizer, max_tokens=512)[0]
    tokens = tuple(tokenizer.convert_ids_to_tokens(item.encoded.input_ids.tolist()))
    sections = item.labels.names()
    rng = np.random.default_rng(seed)
    content = np.array([s not in ("special", "padding") for s in sections])
    magnitude = rng.gamma(1.2, 0.004, size=len(tokens)) * content
    signed = magnitude * rng.uniform(-0.8, 1.0, size=len(tokens))
    for i, token in enumerate(tokens):
        weight = next((w for clue, w in CLUES.items() if clue in token), None)
        if weight is not None:
            magnitude[i] = abs(weight) * 0.06
            signed[i] = weight * 0.05
    masses = masses_of({(0,): 0.08, (1,): 0.21, (3,): 0.0004, (0, 1): 0.41, (1, 2): 0.06, (0, 2, 3): 0.0007})
    bel, pl, betp = measures(masses)
    explained = int(np.argmax(betp))
    width = pl[explained] - bel[explained]
    residual = 0.0031
    shares = section_shares(magnitude, sections, record.record_id)
    return ExplanationView(
        record_id=record.record_id,
        question=QUESTION,
        options=OPTIONS,
        tokens=tokens,
        signed=tuple(float(x) for x in signed),
        magnitude=tuple(float(x) for x in magnitude),
        sections=tuple(sections),
        eligible=tuple(bool(x) for x in item.labels.eligible),
        explained=explained,
        explained_rule="argmax BetP on the original prompt (Sec. 3.1)",
        bel=bel,
        pl=pl,
        betp=betp,
        masses=masses,
        provenance=PROVENANCE,
        section_shares=tuple(zip(SHARE_SECTIONS, (float(s) for s in shares), strict=True)),
        checks=(
            CheckRow("completeness_residual", "Completeness residual R (Eq. 9)", residual, 0.01, "<=", True),
            CheckRow(
                "zero_masking_advantage",
                "Zero-masking advantage A(x) (Eq. 8)",
                0.0213,
                0.0,
                ">=",
                True,
                "top token vs 20 random eligible tokens",
            ),
            CheckRow("reference_endpoint_gap", "|F_c(B) prepared − normal| (Eq. 10)", 0.0142),
        ),
        reference_width=width - float(signed.sum()) - residual,
        gold=record.answer_idx,
    )


@dataclass
class Node:
    """An element of a parsed page (text pieces are ``#text`` children holding ``text``)."""

    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: str = ""

    def iter(self, tag: str | None = None) -> Iterator[Node]:
        """This node and its descendants in document order, optionally only those with ``tag``."""
        if tag is None or self.tag == tag:
            yield self
        for child in self.children:
            yield from child.iter(tag)

    def all_text(self) -> str:
        """Text of this node and its descendants, in document order."""
        return self.text + "".join(child.all_text() for child in self.children)

    def find(self, tag: str, **attrs: str) -> list[Node]:
        """Descendants with ``tag`` whose attributes include ``attrs`` (``class_`` matches one class)."""
        wanted_class = attrs.pop("class_", None)
        return [
            n
            for n in self.iter(tag)
            if all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
            and (wanted_class is None or wanted_class in n.attrs.get("class", "").split())
        ]


class _TreeBuilder(HTMLParser):
    VOID = frozenset({"br", "meta", "link", "img", "input", "hr", "col", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(Node("#text", {}, text=data))


def parse(page: str) -> Node:
    """Parse a page into a tree; unbalanced tags fail the test that parses it."""
    builder = _TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.stack == [builder.root], f"unclosed tags: {[n.tag for n in builder.stack[1:]]}"
    return builder.root
