"""Token sections and eligibility (Sec. 5.2) on hand-written prompts, with tiny and real tokenizers."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, processors
from transformers import PreTrainedTokenizerFast

from xurs_pipeline.data.prompt import format_prompt
from xurs_pipeline.data.records import QuestionRecord, format_line, normalised
from xurs_pipeline.data.schema import CONTENT_SECTIONS, SECTION_NAMES
from xurs_pipeline.data.sections import CharClasses, label_tokens
from xurs_pipeline.data.tokenize import tokenize_records

TRICKY = QuestionRecord(
    record_id="tricky",
    split="test",
    source="medqa",
    question="Serum Na+ is 128 mEq/L; why?",
    options=("SIADH", "-2 mEq/L shift", "(a) hypervolemia", "5% dextrose"),
    answer_idx=0,
)


def labelled(tokenizer, record: QuestionRecord = TRICKY):
    item = tokenize_records([record], tokenizer, max_tokens=512)[0]
    spans = [item.prompt.text[s:e] for s, e in item.encoded.offsets.tolist()]
    return item, spans, item.labels.names(), item.labels.eligible.tolist()


def brute_force(text: str, pieces, offsets, special) -> tuple[list[str], list[bool]]:
    """The documented rule, character by character, without numpy (independent of ``label_tokens``)."""
    owner = {}
    for piece in pieces:
        for i in range(piece.start, piece.end):
            owner[i] = piece.section
    rank = {"option_label": 2, "answer_prefix": 1, "template": 0}
    out_sections, out_eligible = [], []
    for (start, end), is_special in zip(offsets, special, strict=True):
        if is_special:
            out_sections.append("special")
            out_eligible.append(False)
            continue
        chars = [i for i in range(start, end) if not text[i].isspace()]
        if not chars:
            section = owner[start] if end > start else owner[start - 1] if start > 0 else "template"
        else:
            score = {}
            for i in chars:
                a, n = score.get(owner[i], (0, 0))
                score[owner[i]] = (a + text[i].isalnum(), n + 1)
            section = max(score, key=lambda s: (*score[s], 3 if s in CONTENT_SECTIONS else rank[s]))
        out_sections.append(section)
        alnum = any(text[i].isalnum() and owner[i] == section for i in range(start, end))
        out_eligible.append(section in CONTENT_SECTIONS and alnum)
    return out_sections, out_eligible


def test_tricky_prompt_sections_and_eligibility(tiny_tokenizer):
    item, spans, sections, eligible = labelled(tiny_tokenizer)
    assert (sections[0], eligible[0], spans[0]) == ("special", False, "")  # BOS, offsets 0/0
    by_text = {}
    for span, section, ok in zip(spans, sections, eligible, strict=True):
        by_text.setdefault((span.strip(), section), set()).add(ok)
    for letter in "ABCD":  # option labels: "A" and "." are formatting, never eligible
        assert by_text[(letter, "option_label")] == {False}
    assert by_text[(".", "option_label")] == {False}
    assert by_text[("Answer", "answer_prefix")] == by_text[(":", "answer_prefix")] == {False}
    assert by_text[("", "template")] == {False}  # newlines and the space after each label
    assert by_text[("Question", "template")] == {False}
    for punct, section in [(";", "question"), ("?", "question"), ("-", "option_B"), ("(", "option_C")]:
        assert by_text[(punct, section)] == {False}, punct
    assert any(
        span.strip().isdigit() and sec == "question" and ok
        for span, sec, ok in zip(spans, sections, eligible, strict=True)
    )
    assert sections[-1] == "answer_prefix"
    assert item.prompt.text.endswith("Answer:")


def test_section_tokens_reassemble_each_section(tiny_tokenizer):
    item, spans, sections, _ = labelled(tiny_tokenizer)
    for piece_section in ("question", *CONTENT_SECTIONS[1:]):
        start, end = item.prompt.span_of(piece_section)
        expected = "".join(item.prompt.text[start:end].split())
        got = "".join(
            "".join(s.split()) for s, sec in zip(spans, sections, strict=True) if sec == piece_section
        )
        assert got == expected, piece_section


def test_leading_space_in_offsets_does_not_change_labels(tiny_tokenizer):
    """A copy of the tokenizer that trims the leading space from offsets labels every token alike."""
    backend = Tokenizer.from_str(tiny_tokenizer.backend_tokenizer.to_str())
    backend.post_processor = processors.Sequence(
        [processors.ByteLevel(trim_offsets=True), backend.post_processor]
    )
    trimmed = PreTrainedTokenizerFast(tokenizer_object=backend, **tiny_tokenizer.special_tokens_map)
    item_a, spans_a, sections_a, eligible_a = labelled(tiny_tokenizer)
    item_b, spans_b, sections_b, eligible_b = labelled(trimmed)
    assert item_a.encoded.input_ids.tolist() == item_b.encoded.input_ids.tolist()
    assert any(a.startswith(" ") and b == a.lstrip() for a, b in zip(spans_a, spans_b, strict=True))
    assert (sections_a, eligible_a) == (sections_b, eligible_b)


def test_straddling_token_rule_on_handmade_offsets():
    prompt = format_prompt("Why?", ("Foo", "Bar", "Baz", "Qux"))
    text = prompt.text
    a = text.index("A.")
    q = text.index("?")
    offsets = np.array(
        [
            [q, a + 1],  # "?\nA": the label letter is its only letter -> option_label
            [a + 1, a + 5],  # ". Fo": label '.' + option 'Fo' -> option_A (more letters), eligible
            [a + 1, a + 2],  # "." alone: option_label, not eligible
            [0, 0],  # special
            [a + 2, a + 3],  # " ": whitespace-only, takes the section of its first char (template)
        ]
    )
    special = np.array([False, False, False, True, False])
    labels = label_tokens(CharClasses.of(prompt), offsets, special)
    assert labels.names() == ["option_label", "option_A", "option_label", "special", "template"]
    assert labels.eligible.tolist() == [False, True, False, False, False]
    assert labels.straddling == 2
    more = label_tokens(CharClasses.of(prompt), np.array([[q - 1, a + 1]]), np.array([False]))  # "y?\nA"
    assert more.names() == ["question"]  # one letter each, but two non-whitespace question chars
    plain = format_prompt("Why", ("Foo", "Bar", "Baz", "Qux"))
    y, a2 = plain.text.index("y\n"), plain.text.index("A.")
    tie = label_tokens(CharClasses.of(plain), np.array([[y, a2 + 1]]), np.array([False]))  # "y\nA"
    assert (tie.names(), tie.eligible.tolist()) == (["question"], [True])  # full tie: text beats label


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    question=st.text(alphabet="ab1 .,?-()%/\n", min_size=1, max_size=40)
    .filter(str.strip)
    .filter(lambda text: format_line(text) is None),  # records refuse a line like "b." (tests/reliability/corpus/cases.yaml)
    options=st.lists(
        st.text(alphabet="xyz9 .-:(", min_size=1, max_size=12).filter(str.strip), min_size=4, max_size=4
    ).filter(lambda texts: len({normalised(t) for t in texts}) == 4),  # records refuse identical options
)
def test_labels_agree_with_brute_force(tiny_tokenizer, question, options):
    record = QuestionRecord("p", "test", "medqa", question, tuple(options), 0)  # type: ignore[arg-type]
    item, _, sections, eligible = labelled(tiny_tokenizer, record)
    expected = brute_force(
        item.prompt.text, item.prompt.pieces, item.encoded.offsets.tolist(), item.encoded.special
    )
    assert (sections, eligible) == expected
    assert set(sections) <= set(SECTION_NAMES)


def test_real_smollm2_tokenizer_sections(smollm2_tokenizer):
    item, spans, sections, eligible = labelled(smollm2_tokenizer)
    assert any(s.startswith(" ") and len(s) > 1 for s in spans), (
        "byte-level offsets include the leading space"
    )
    expected = brute_force(
        item.prompt.text, item.prompt.pieces, item.encoded.offsets.tolist(), item.encoded.special
    )
    assert (sections, eligible) == expected
    for piece_section in CONTENT_SECTIONS:
        start, end = item.prompt.span_of(piece_section)
        got = "".join(
            "".join(s.split()) for s, sec in zip(spans, sections, strict=True) if sec == piece_section
        )
        assert got == "".join(item.prompt.text[start:end].split()), piece_section
    labels = [(s.strip(), sec) for s, sec in zip(spans, sections, strict=True) if sec == "option_label"]
    assert "".join(t for t, _ in labels) == "A.B.C.D."
    assert [
        (s, e) for s, sec, e in zip(spans, sections, eligible, strict=True) if sec == "answer_prefix"
    ] == [
        ("Answer", False),
        (":", False),
    ]
    assert eligible == [
        sec in CONTENT_SECTIONS and any(c.isalnum() for c in s)
        for s, sec in zip(spans, sections, strict=True)
    ]


def test_empty_span_token_takes_the_section_of_the_trimmed_character():
    prompt = format_prompt("Why not?", ("a", "b", "c", "d"))
    after_space = prompt.text.index("not")  # a trimmed ' ' token inside the question sits at (k, k)
    labels = label_tokens(
        CharClasses.of(prompt), np.array([[0, 0], [after_space, after_space]]), np.array([False, False])
    )
    assert labels.names() == ["template", "question"]
    assert labels.eligible.tolist() == [False, False]
