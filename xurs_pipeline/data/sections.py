"""Token sections and zero-masking eligibility from tokenizer offsets (Sec. 5.2).

Tokenizers disagree on offsets: byte-level BPE (GPT-2, SmolLM, Llama-3) counts the leading space in a
token's span (``'ĠA'`` spans ``' A'``), others trim it. So a token is judged by the NON-WHITESPACE
characters inside its span ``[start, end)``:

- special tokens (the tokenizer's ``special_tokens_mask``) are ``special``;
- a token whose span holds non-whitespace characters of one section takes that section;
- a token straddling several sections takes the section owning most of its letters and digits, then
  most of its non-whitespace characters; remaining ties go to question/option text, then option
  label, then answer prefix, then template, so text content is never hidden behind formatting;
- a whitespace-only token (newline, lone ``'Ġ'``) takes the section of its first character; a
  non-special token with an empty span ``(k, k)`` (a whitespace token whose offsets the tokenizer
  trimmed) takes the section of character ``k - 1``, the whitespace trimmed away (``template`` if k = 0).

A token is eligible (Sec. 5.2) when its section is the question or an option's text AND the characters
it holds in that section contain a letter or digit (``str.isalnum``). Special tokens, padding, option
labels, the ``Answer:`` prefix, template text and punctuation- or whitespace-only tokens are not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xurs_pipeline.data.prompt import FormattedPrompt
from xurs_pipeline.data.schema import CONTENT_SECTIONS, SECTION_NAMES

SECTION_INDEX = {name: i for i, name in enumerate(SECTION_NAMES)}
_N = len(SECTION_NAMES)
_CONTENT = np.array([name in CONTENT_SECTIONS for name in SECTION_NAMES])
# Tie-break priority (higher wins): content text, option label, answer prefix, template.
_PRIORITY = np.array(
    [
        3 if name in CONTENT_SECTIONS else {"option_label": 2, "answer_prefix": 1}.get(name, 0)
        for name in SECTION_NAMES
    ]
)
_ASCII_SPACE = np.array([chr(c).isspace() for c in range(128)])
_ASCII_ALNUM = np.array([chr(c).isalnum() for c in range(128)])


@dataclass(frozen=True)
class CharClasses:
    """Per-character facts of a prompt: sections, and prefix sums of character classes.

    ``nonws[i]`` / ``alnum[i]`` count the non-whitespace / letter-or-digit characters in ``text[:i]``,
    so a span's count is a difference of two entries. The prompt's pieces (contiguous spans, one
    section each) let counts per section be taken span by span without a per-character table.
    """

    section: np.ndarray  # (n_chars,) section index of each character
    nonws: np.ndarray  # (n_chars + 1,) cumulative count of non-whitespace characters
    alnum: np.ndarray  # (n_chars + 1,) cumulative count of letters and digits
    piece_bounds: np.ndarray  # (n_pieces, 2) character span of each piece
    piece_onehot: np.ndarray  # (n_pieces, n_sections) 1 where the piece belongs to the section

    @classmethod
    def of(cls, prompt: FormattedPrompt) -> CharClasses:
        text = prompt.text
        piece_section = np.array([SECTION_INDEX[p.section] for p in prompt.pieces], dtype=np.int64)
        bounds = np.array([[p.start, p.end] for p in prompt.pieces], dtype=np.int64).reshape(-1, 2)
        section = np.repeat(piece_section, bounds[:, 1] - bounds[:, 0])
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        ascii_ = codes < 128
        space = np.zeros(len(text), dtype=bool)
        alnum = np.zeros(len(text), dtype=bool)
        space[ascii_] = _ASCII_SPACE[codes[ascii_]]
        alnum[ascii_] = _ASCII_ALNUM[codes[ascii_]]
        for i in np.flatnonzero(~ascii_):
            space[i], alnum[i] = text[i].isspace(), text[i].isalnum()
        onehot = np.zeros((len(bounds), _N), dtype=np.int64)
        onehot[np.arange(len(bounds)), piece_section] = 1
        zero = np.zeros(1, dtype=np.int64)
        return cls(
            section,
            np.concatenate([zero, np.cumsum(~space)]),
            np.concatenate([zero, np.cumsum(alnum)]),
            bounds,
            onehot,
        )

    def counts(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(non-whitespace, alnum) characters of each token in each section, each (n_tokens, n_sections)."""
        lo = np.maximum(offsets[:, :1], self.piece_bounds[None, :, 0])  # (n_tokens, n_pieces)
        hi = np.maximum(np.minimum(offsets[:, 1:], self.piece_bounds[None, :, 1]), lo)
        return (self.nonws[hi] - self.nonws[lo]) @ self.piece_onehot, (
            self.alnum[hi] - self.alnum[lo]
        ) @ self.piece_onehot


@dataclass(frozen=True)
class TokenLabels:
    sections: np.ndarray  # (n_tokens,) section index into SECTION_NAMES
    eligible: np.ndarray  # (n_tokens,) bool
    straddling: int  # tokens whose non-whitespace characters touch more than one section

    def names(self) -> list[str]:
        return [SECTION_NAMES[i] for i in self.sections]


def label_tokens(chars: CharClasses, offsets: np.ndarray, special: np.ndarray) -> TokenLabels:
    """Section and eligibility of each token. offsets (n_tokens, 2) char spans, special (n_tokens,) bool."""
    start, end = offsets[:, 0], offsets[:, 1]
    nonws, alnum = chars.counts(offsets)  # (n_tokens, n_sections) each
    key = (alnum * (len(chars.section) + 1) + nonws) * 4 + _PRIORITY  # lexicographic: alnum, nonws, priority
    chosen = np.argmax(key, axis=1)
    whitespace_only = nonws.sum(axis=1) == 0
    empty = end <= start
    n_chars = len(chars.section)
    if n_chars:
        position = np.clip(np.where(empty, start - 1, start), 0, n_chars - 1)
        fallback = np.where(empty & (start == 0), SECTION_INDEX["template"], chars.section[position])
        chosen = np.where(whitespace_only, fallback, chosen)
    else:
        chosen = np.full(len(chosen), SECTION_INDEX["template"])
    chosen = np.where(special, SECTION_INDEX["special"], chosen)
    rows = np.arange(len(chosen))
    eligible = ~special & _CONTENT[chosen] & (alnum[rows, chosen] > 0)
    straddling = int(((nonws > 0).sum(axis=1) > 1).sum())
    return TokenLabels(chosen, eligible, straddling)


def tokens_in_span(
    chars: CharClasses, offsets: np.ndarray, special: np.ndarray, span: tuple[int, int]
) -> list[int]:
    """Indices of tokens with a non-whitespace character in ``span`` = (start, end) of the prompt text.

    Whitespace-only tokens count when they start strictly inside the span (spaces between its words).
    """
    a, b = span
    lo, hi = np.maximum(offsets[:, 0], a), np.minimum(offsets[:, 1], b)
    inside = (chars.nonws[np.maximum(hi, lo)] - chars.nonws[lo]) > 0
    token_nonws = chars.nonws[offsets[:, 1]] - chars.nonws[offsets[:, 0]]
    ws_inside = (token_nonws == 0) & (offsets[:, 0] > a) & (offsets[:, 0] < b)
    return np.flatnonzero((inside | ws_inside) & ~special).tolist()
