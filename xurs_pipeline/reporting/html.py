"""HTML explanations of the report: one page per explained question and an index page linking them.

Public API (pure rendering over plain typed inputs; the report stage builds the views from artifacts):

- :class:`ExplanationView`, :class:`CheckRow`, :class:`ReportProvenance` (``html_view.py``);
- ``render_explanation(view, index_href="index.html") -> str`` (``html_explanation.py``);
- ``index_entry(view, href=None) -> IndexEntry`` and ``render_index(entries, title, subtitle) -> str``
  (``html_index.py``);
- ``write_report(views, out_dir, title, subtitle) -> list[Path]`` (here): renders every page first and
  only then writes them, each atomically, so a view that fails to render leaves nothing written;
- ``write_explanation(view, path) -> Path`` (here): one standalone page (``xurs explain``), no index link.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from markupsafe import Markup

from xurs_pipeline.io import atomic_path
from xurs_pipeline.reporting.html_explanation import TOP_TOKENS, render_explanation
from xurs_pipeline.reporting.html_index import IndexEntry, index_entry, page_name, render_index
from xurs_pipeline.reporting.html_view import (
    ADVANTAGE_CHECK,
    RESIDUAL_CHECK,
    CheckRow,
    ExplanationView,
    Mark,
    ReportProvenance,
)

INDEX_FILE = "index.html"

__all__ = [
    "ADVANTAGE_CHECK",
    "INDEX_FILE",
    "RESIDUAL_CHECK",
    "CheckRow",
    "ExplanationView",
    "IndexEntry",
    "Mark",
    "ReportProvenance",
    "index_entry",
    "page_name",
    "render_explanation",
    "render_index",
    "write_explanation",
    "write_report",
]


def _page_names(views: Sequence[ExplanationView]) -> list[str]:
    seen: dict[str, str] = {}
    names = []
    for view in views:
        name = page_name(view.record_id)
        if name in seen or name == INDEX_FILE:
            other = seen.get(name, "the index page")
            raise ValueError(
                f"record {view.record_id!r}: its page {name!r} would overwrite that of {other!r}; "
                "record ids of explained questions must be unique"
            )
        seen[name] = view.record_id
        names.append(name)
    return names


def write_report(
    views: Sequence[ExplanationView],
    out_dir: str | os.PathLike[str],
    title: str = "XU-RS explanations",
    subtitle: str = "",
    front: Markup | None = None,
    extra_pages: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write one page per view, ``extra_pages`` (relative path -> HTML, e.g. rendered tables) and
    ``index.html`` (with the ``front`` sections above the list) under ``out_dir``; returns the page
    paths, index last.

    Every page is rendered before anything is written: an error in any view (or a duplicate record id)
    raises with nothing written. Each file is then written atomically (``io.atomic_path``).
    """
    if not views:
        raise ValueError(f"{out_dir}: no explained questions to write a report for")
    names = _page_names(views)
    named = list(zip(names, views, strict=True))
    pages = {name: render_explanation(view, index_href=INDEX_FILE) for name, view in named}
    entries = [index_entry(view, href=name) for name, view in named]
    pages.update(extra_pages or {})
    pages[INDEX_FILE] = render_index(entries, title=title, subtitle=subtitle, front=front)
    written = []
    for name, text in pages.items():
        target = Path(out_dir) / name
        with atomic_path(target) as tmp:
            tmp.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def write_explanation(view: ExplanationView, path: str | os.PathLike[str], top_k: int = TOP_TOKENS) -> Path:
    """Write one standalone page (no link to an index, ``top_k`` top tokens) atomically to ``path``."""
    text = render_explanation(view, index_href=None, top_k=top_k)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
