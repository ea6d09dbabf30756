"""Token heatmap cells: display text of tokenizer pieces and their colours (Sec. 3.4 token scores).

Display text: byte-level pieces (``'Ġpatient'``, ``'Ċ'``) are mapped back to their bytes with GPT-2's
byte table, SentencePiece pieces (``'▁patient'``, ``'<0x0A>'``) by ``'▁'`` -> space and byte fallback,
anything else taken as text; the bytes are then decoded as one UTF-8 stream. Special tokens keep their
raw text (``<|im_start|>``).

Colours come from matplotlib colour maps: the signed view uses the diverging ``RdBu_r`` (blue negative,
red positive) with ``value / max|value|``, its centre pinned to pure white; the magnitude view the
sequential ``Purples`` with ``value / max value``. The maximum runs over the tokens drawn in colour (not
special or padding tokens), so the strongest token on the page gets the full colour.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import matplotlib as mpl
from matplotlib.colors import Colormap, LinearSegmentedColormap, to_hex

from xurs_pipeline.reporting.html_view import GREYED_SECTIONS, HIDDEN_SECTIONS, ExplanationView

SIGNED_CMAP = "RdBu_r"
MAGNITUDE_CMAP = "Purples"
LEGEND_STOPS = 11
DARK_TEXT_BELOW = 0.45  # relative luminance under which the token text turns white
NEWLINE_MARK = "↵"
TAB_MARK = "⇥"
_BYTE_LEVEL_MARKERS = frozenset(chr(c) for c in range(0x100, 0x144))  # GPT-2 map of non-printable bytes
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # SentencePiece byte fallback


@lru_cache(maxsize=1)
def _byte_level_table() -> dict[str, int]:
    """GPT-2's printable stand-in character of each byte, inverted (``encoder.py``, Radford et al. 2019;
    ``tokenizers``' ByteLevel uses the same table): ``'Ġ'`` -> 0x20, ``'Ċ'`` -> 0x0A, ``'A'`` -> 0x41."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in kept]
    table = {chr(b): b for b in kept}
    table.update({chr(256 + n): b for n, b in enumerate(moved)})
    return table


def detect_scheme(tokens: Sequence[str]) -> str:
    """``"metaspace"`` if any piece holds ``'▁'`` or is a ``<0xNN>`` byte, ``"byte_level"`` if any holds a
    GPT-2 byte marker (``'Ġ'``, ``'Ċ'``, ...), else ``"plain"`` (pieces already decoded)."""
    if any("▁" in t or _BYTE_PIECE.fullmatch(t) for t in tokens):
        return "metaspace"
    if any(not _BYTE_LEVEL_MARKERS.isdisjoint(t) for t in tokens):
        return "byte_level"
    return "plain"


def token_bytes(token: str, scheme: str) -> bytes:
    """The UTF-8 bytes a piece stands for under ``scheme`` (see :func:`detect_scheme`)."""
    if scheme == "byte_level":
        table = _byte_level_table()
        if all(ch in table for ch in token):
            return bytes(table[ch] for ch in token)
    elif scheme == "metaspace":
        byte = _BYTE_PIECE.fullmatch(token)
        return bytes([int(byte.group(1), 16)]) if byte else token.replace("▁", " ").encode()
    return token.encode()


def display_texts(tokens: Sequence[str], sections: Sequence[str], scheme: str = "auto") -> list[str]:
    """Readable text of each piece (spaces and newlines restored); special tokens unchanged. (seq,)

    ``scheme``: one of ``html_view.TOKEN_SCHEMES``; ``"auto"`` guesses it (:func:`detect_scheme`).

    Bytes are decoded as a stream, like streaming generation: a character split over several pieces
    (``'°'`` as two byte pieces) is shown on the piece that completes it, the pieces before it show
    nothing, so the pieces still read as the prompt. Invalid bytes show as U+FFFD.
    """
    if scheme == "auto":
        scheme = detect_scheme([t for t, s in zip(tokens, sections, strict=True) if s not in GREYED_SECTIONS])
    stream = codecs.getincrementaldecoder("utf-8")(errors="replace")
    out = []
    for token, section in zip(tokens, sections, strict=True):
        if section in GREYED_SECTIONS:
            out.append(stream.decode(b"", final=True) + token)
            stream.reset()
        else:
            out.append(stream.decode(token_bytes(token, scheme)))
    if out:
        out[-1] += stream.decode(b"", final=True)
    return out


def visible(text: str) -> tuple[str, int]:
    """(text with newlines and tabs shown as marks, number of line breaks to put after it)."""
    return text.replace("\n", NEWLINE_MARK).replace("\t", TAB_MARK), text.count("\n")


@lru_cache(maxsize=4)
def colour_map(name: str) -> Colormap:
    """A matplotlib colour map by name; the diverging one is pinned to pure white at its centre, so tokens
    with (near) zero attribution are not drawn as grey boxes."""
    base = mpl.colormaps[name]
    if name != SIGNED_CMAP:
        return base
    anchors = [0.0, 0.15, 0.3, 0.5, 0.7, 0.85, 1.0]
    colours = [base(a) if a != 0.5 else (1.0, 1.0, 1.0, 1.0) for a in anchors]
    # An odd number of entries puts one exactly at the centre, so zero is drawn pure white.
    return LinearSegmentedColormap.from_list(f"{name}_white", list(zip(anchors, colours, strict=True)), N=255)


@dataclass(frozen=True)
class ColourScale:
    """Maps a value to a background colour: signed (diverging, symmetric) or magnitude (sequential)."""

    cmap: str
    vmax: float
    signed: bool

    def position(self, value: float) -> float:
        """Where ``value`` falls on the colour map, in [0, 1] (0.5 is zero for a signed scale)."""
        if self.vmax <= 0:
            return 0.5 if self.signed else 0.0
        ratio = max(-1.0, min(1.0, value / self.vmax))
        return 0.5 + 0.5 * ratio if self.signed else max(0.0, ratio)

    def colours(self, values: Sequence[float]) -> list[tuple[str, str]]:
        """(background ``#rrggbb``, text colour) per value, (n,); white text on dark backgrounds."""
        rgba = colour_map(self.cmap)([self.position(v) for v in values])  # (n, 4), one lookup
        luminance = rgba[:, :3] @ (0.2126, 0.7152, 0.0722)
        return [
            (to_hex(c), "#ffffff" if y < DARK_TEXT_BELOW else "#111111")
            for c, y in zip(rgba, luminance, strict=True)
        ]

    def gradient(self) -> str:
        """CSS ``linear-gradient`` of the scale from its low to its high end (for the legend)."""
        stops = [i / (LEGEND_STOPS - 1) for i in range(LEGEND_STOPS)]
        cmap = colour_map(self.cmap)
        return "linear-gradient(to right, " + ", ".join(to_hex(cmap(s)) for s in stops) + ")"


MARK_STYLES = 3  # distinct outline styles for marks (html_style: .mark-0 .. .mark-2), reused cyclically


@dataclass(frozen=True)
class TokenCell:
    """One drawn token: its visible text, line breaks after it, style, tooltip and CSS class."""

    text: str
    breaks: int
    background: str
    colour: str
    tooltip: str
    css_class: str
    mark: str = ""  # the label of the view's mark holding this token ("" if none)


def _shaded(view: ExplanationView) -> list[int]:
    return [i for i, s in enumerate(view.sections) if s not in GREYED_SECTIONS + HIDDEN_SECTIONS]


def scales(view: ExplanationView) -> tuple[ColourScale, ColourScale]:
    """(signed scale, magnitude scale), each normalised to the page's largest shaded token."""
    shaded = _shaded(view)
    signed_max = max((abs(view.signed[i]) for i in shaded), default=0.0)
    magnitude_max = max((view.magnitude[i] for i in shaded), default=0.0)
    return ColourScale(SIGNED_CMAP, signed_max, True), ColourScale(MAGNITUDE_CMAP, magnitude_max, False)


def _tooltip(view: ExplanationView, i: int, raw: str) -> str:
    eligible = "eligible" if view.eligible[i] else "not eligible"
    return (
        f"#{i} {raw!r} · section {view.sections[i]} · {eligible} for zero-masking · "
        f"signed {view.signed[i]:+.9g} · magnitude {view.magnitude[i]:.9g}"
    )


def token_cells(view: ExplanationView, values: Sequence[float], scale: ColourScale) -> list[TokenCell]:
    """Cells for every token but padding, in order; ``values`` (seq,): signed or magnitude, pick colours."""
    texts = display_texts(view.tokens, view.sections, view.token_scheme)
    colours = scale.colours(values)
    marked = {p: (k, mark.label) for k, mark in enumerate(view.marks) for p in mark.positions}
    cells = []
    for i, (raw, text) in enumerate(zip(view.tokens, texts, strict=True)):
        section = view.sections[i]
        if section in HIDDEN_SECTIONS:
            continue
        shown, breaks = visible(text)
        if section in GREYED_SECTIONS:
            background, colour, css = "transparent", "#9a9a9a", "tok special"
        else:
            background, colour = colours[i]
            css = "tok" if view.eligible[i] else "tok ineligible"
        tooltip, label = _tooltip(view, i, raw), ""
        if i in marked:
            k, label = marked[i]
            css, tooltip = f"{css} mark mark-{k % MARK_STYLES}", f"{tooltip} · {label}"
        cells.append(TokenCell(shown, breaks, background, colour, tooltip, css, label))
    return cells


def hidden_count(view: ExplanationView) -> int:
    """Number of padding positions left out of the heatmaps."""
    return sum(s in HIDDEN_SECTIONS for s in view.sections)
