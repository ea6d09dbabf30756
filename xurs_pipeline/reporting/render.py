"""Render a results table three ways (Markdown, LaTeX booktabs, CSV) from a DataFrame.

Numbers are never typed by hand: a :class:`TableSpec` says which columns of an artifact-derived frame
to show and how to format them; the output files carry the experiment name and config hash that made
them. The LaTeX file also defines a ``\\<Name>Rows`` macro holding only the body rows, so the paper's
table environments (``\\EffectRows``, ``\\NumericsRows``, ...) can ``\\input`` them unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from xurs_pipeline.io import atomic_path

Formatter = Callable[[Any], str]


def fmt_float(digits: int) -> Formatter:
    """Fixed-point formatter; missing values render as an em dash."""

    def _fmt(value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "—"
        return f"{float(value):.{digits}f}"

    return _fmt


def fmt_percent(digits: int) -> Formatter:
    """A fraction in [0, 1] shown as a percentage."""
    inner = fmt_float(digits)
    return lambda value: inner(None if value is None else 100.0 * float(value))


def fmt_interval(digits: int, percent: bool = False) -> Formatter:
    """A (low, high) pair shown as ``[low, high]``; ``percent``: fractions in [0, 1] shown as percentages."""
    inner = (fmt_percent if percent else fmt_float)(digits)
    return lambda pair: f"[{inner(pair[0])}, {inner(pair[1])}]"


def fmt_text(value: Any) -> str:
    return str(value)


def fmt_verdict(value: Any) -> str:
    return "pass" if bool(value) else "FAIL"


def fmt_yes_no(value: Any) -> str:
    return "yes" if bool(value) else "no"


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    fmt: Formatter = fmt_text
    align: str = "r"  # LaTeX column alignment: l, r or c


@dataclass(frozen=True)
class TableSpec:
    name: str  # file stem, e.g. "table1_effects"
    macro: str  # LaTeX macro for the body rows, e.g. "EffectRows"
    caption: str
    columns: Sequence[Column]


def _cells(frame: pd.DataFrame, spec: TableSpec) -> list[list[str]]:
    missing = [c.key for c in spec.columns if c.key not in frame.columns]
    if missing:
        raise KeyError(
            f"table {spec.name}: artifact frame lacks columns {missing}; has {list(frame.columns)}"
        )
    return [[col.fmt(row[col.key]) for col in spec.columns] for _, row in frame.iterrows()]


# LaTeX's special characters, replaced in one pass (so a replacement is never escaped again).
_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "—": "---",
}
_TEX_SPECIAL = re.compile("|".join(re.escape(c) for c in _TEX))
# Markdown syntax in a text cell: raw HTML (``<`` before a tag name, ``&`` before an entity), emphasis,
# code, links, the table's own pipes, escapes, line breaks; an underscore inside a word
# (``family000_case00``) opens no emphasis and stays as it is, and so does ``<= 0.05``.
_MD_SPECIAL = re.compile(
    r"[\\`*|~\[\]!#$^]|<(?=[A-Za-z/!?])|&(?=[#A-Za-z0-9])|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])"
)


def _tex_escape(text: str) -> str:
    """``text`` as LaTeX typesets it literally: ``\\ & % $ # _ { } ~ ^ < >`` escaped, line breaks as
    spaces."""
    return _TEX_SPECIAL.sub(lambda m: _TEX[m.group()], " ".join(text.splitlines()))


def _md_escape(text: str) -> str:
    """A text value (a record id, a setting) as Markdown shows it literally: every character with
    Markdown or HTML meaning backslash-escaped, line breaks as spaces."""
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(), " ".join(text.splitlines()))


def to_markdown(frame: pd.DataFrame, spec: TableSpec, footer: str) -> str:
    text_cells = [c.fmt is fmt_text for c in spec.columns]  # values from the data; the rest we format
    rows = [
        [_md_escape(v) if t else v for v, t in zip(r, text_cells, strict=True)] for r in _cells(frame, spec)
    ]
    head = "| " + " | ".join(c.header for c in spec.columns) + " |"
    rule = "|" + "|".join("---:" if c.align == "r" else "---" for c in spec.columns) + "|"
    body = ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join([f"**{spec.caption}**", "", head, rule, *body, "", f"_{_md_escape(footer)}_", ""])


def to_latex(frame: pd.DataFrame, spec: TableSpec, footer: str) -> str:
    rows = [" & ".join(_tex_escape(c) for c in r) + r"\\" for r in _cells(frame, spec)]
    body = "\n".join(rows)
    align = "@{}" + "".join(c.align for c in spec.columns) + "@{}"
    head = " & ".join(_tex_escape(c.header) for c in spec.columns) + r"\\"
    return "\n".join(
        [
            f"% {' '.join(footer.splitlines())}",  # one comment line: a line break would start live LaTeX
            f"\\newcommand{{\\{spec.macro}}}{{%",
            body,
            "}",
            r"\begin{table}[t]",
            r" \centering",
            f" \\caption{{{_tex_escape(spec.caption)}}}",
            f" \\begin{{tabular}}{{{align}}}",
            r" \toprule",
            f" {head}",
            r" \midrule",
            f" \\{spec.macro}",
            r" \bottomrule",
            r" \end{tabular}",
            r"\end{table}",
            "",
        ]
    )


def write_table(
    frame: pd.DataFrame,
    spec: TableSpec,
    out_dir: str | Path,
    experiment: str,
    config_hash: str,
    note: str = "",
) -> list[Path]:
    """Write ``<name>.md``, ``<name>.tex`` and ``<name>.csv`` atomically; return their paths.

    ``note`` (e.g. a deviation from the paper's data split) is appended to the footer of every format."""
    out = Path(out_dir)
    footer = f"experiment {experiment}, config {config_hash}" + (f"; {note}" if note else "")
    paths = []
    for suffix, text in (
        (".md", to_markdown(frame, spec, footer)),
        (".tex", to_latex(frame, spec, footer)),
    ):
        with atomic_path(out / f"{spec.name}{suffix}") as tmp:
            tmp.write_text(text)
        paths.append(out / f"{spec.name}{suffix}")
    csv = frame[[c.key for c in spec.columns]].copy()
    csv["experiment"] = experiment
    csv["config_hash"] = config_hash
    if note:
        csv["note"] = note
    with atomic_path(out / f"{spec.name}.csv") as tmp:
        csv.to_csv(tmp, index=False)
    paths.append(out / f"{spec.name}.csv")
    return paths
