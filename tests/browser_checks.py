"""The report read in a real browser: headless Chromium (Debian's ``chromium`` package at
:data:`CHROMIUM`) driven by Playwright for Python, never a downloaded browser (no ``playwright install``).

Each check returns what is wrong (an empty list when the page is fine), so a test can assert the list is
empty on the real report and non-empty on a page broken on purpose:

- :func:`console_errors`: console errors and uncaught exceptions while the page loads and runs;
- :func:`sort_is_broken`: clicking a heading of the explanation table does not sort its rows;
- :func:`broken_links`: local links and images that do not resolve to a file (or an ``id`` on the page);
- :func:`overflowing`: elements that stick out of the viewport (at 900 px) without a scrolling container;
- :func:`empty_images`: images that did not decode or are blank (one colour).

The ``chromium`` session fixture (``tests/conftest.py``) launches the browser once per worker; where
``/usr/bin/chromium`` or Playwright is missing the browser tests skip, unless ``XURS_BROWSER_REQUIRED`` is
set (CI, ``.ci/run``), where they fail.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REQUIRED_ENV = "XURS_BROWSER_REQUIRED"
NARROW = {"width": 900, "height": 1000}


def browser_missing() -> str:
    """Why the browser tests cannot run here ("" when they can)."""
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing (Debian: apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return 'Playwright for Python is missing (pip install -e ".[dev]")'
    return ""


def required() -> bool:
    return bool(os.environ.get(REQUIRED_ENV))


def open_page(browser: Any, path: Path, viewport: dict[str, int] | None = None) -> tuple[Any, list[str]]:
    """A new page showing ``path`` (``file://``), and the list its console errors and uncaught exceptions
    are appended to (a console message of type error or a page error)."""
    page = browser.new_page(viewport=viewport or {"width": 1280, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.goto(path.resolve().as_uri(), wait_until="load")
    return page, errors


def console_errors(browser: Any, path: Path) -> list[str]:
    """Console errors and uncaught exceptions of ``path`` while it loads."""
    page, errors = open_page(browser, path)
    page.wait_for_timeout(100)  # let inline scripts finish
    page.close()
    return errors


SORT_COLUMNS = {"Record": "text", "Width": "num", "Residual": "num"}


def _column(page: Any, index: int) -> list[str]:
    return page.eval_on_selector_all(
        f"#index-table tbody tr td:nth-child({index + 1})", "cells => cells.map(c => c.dataset.sort)"
    )


def _key(kind: str, value: str) -> Any:
    return (float("-inf") if value == "" else float(value)) if kind == "num" else value


def sort_is_broken(browser: Any, path: Path) -> list[str]:
    """Click each heading of :data:`SORT_COLUMNS` twice: the rows must follow its values descending, then
    ascending (what the page's script promises). Returns what did not sort."""
    page, _ = open_page(browser, path)
    heads = page.eval_on_selector_all("#index-table thead th", "hs => hs.map(h => h.textContent.trim())")
    wrong = []
    for name, kind in SORT_COLUMNS.items():
        if name not in heads:
            wrong.append(f"no {name!r} heading in {heads}")
            continue
        col = heads.index(name)
        for descending in (True, False):
            page.click(f"#index-table thead th:nth-child({col + 1})")
            values = [_key(kind, v) for v in _column(page, col)]
            if values != sorted(values, reverse=descending):
                order = "descending" if descending else "ascending"
                wrong.append(f"{name} not {order} after a click: {values}")
    page.close()
    return wrong


def report_pages(html_dir: Path) -> list[Path]:
    """Every HTML page of a report: the front page, the table pages and the question pages."""
    return sorted(html_dir.rglob("*.html"))


def broken_links(browser: Any, *paths: Path) -> list[str]:
    """Local ``a[href]`` and ``img[src]`` of each of ``paths`` that resolve to no file, or to no ``id`` on the
    page for a fragment. Links to other sites are left alone (the report has none). One tab visits the
    pages in turn: a new tab a page made this one of the suite's slowest checks (BENCHMARKS.md section 16)."""
    page = browser.new_page()
    try:
        return [problem for path in paths for problem in _broken_links_of(page, path)]
    finally:
        page.close()


def _broken_links_of(page: Any, path: Path) -> list[str]:
    page.goto(path.resolve().as_uri(), wait_until="load")
    targets = page.eval_on_selector_all(
        "a[href], img[src]", "els => els.map(e => [e.tagName, e.getAttribute(e.src ? 'src' : 'href'), "
        "e.href || e.src])"
    )
    ids = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
    broken = []
    for tag, raw, resolved in targets:
        url = urlparse(resolved)
        if url.scheme != "file":
            continue
        if raw.startswith("#"):
            if url.fragment not in ids:
                broken.append(f"{path.name}: {tag} {raw} (no such id)")
        elif not Path(unquote(url.path)).is_file():
            broken.append(f"{path.name}: {tag} {raw} -> {unquote(url.path)} (no such file)")
    return broken


OVERFLOW_SCRIPT = """
() => {
  const width = document.documentElement.clientWidth;
  const clips = el => {
    for (let a = el.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if ((o === "auto" || o === "scroll" || o === "hidden") && a.getBoundingClientRect().right <= width + 1)
        return true;
    }
    return false;
  };
  const out = [];
  if (document.documentElement.scrollWidth > width + 1)
    out.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1 && !clips(el))
      out.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${el.className}: ` +
               `right ${Math.round(r.right)} > ${width}`);
  }
  return out;
}
"""


def overflowing(browser: Any, path: Path) -> list[str]:
    """Elements of ``path`` at 900 px that reach past the viewport's right edge, unless a container that
    scrolls (or clips) sideways holds them inside the viewport; and whether the page itself scrolls
    sideways."""
    page, _ = open_page(browser, path, NARROW)
    found = page.evaluate(OVERFLOW_SCRIPT)
    page.close()
    return [f"{path.name}: {line}" for line in found]


def _blank(png: bytes) -> bool:
    """True when the image has a single colour (nothing drawn)."""
    import numpy as np
    from matplotlib import image

    pixels = image.imread(io.BytesIO(png), format="png")
    return bool(pixels.size == 0 or np.all(pixels == pixels.reshape(-1, pixels.shape[-1])[0]))


def empty_images(browser: Any, path: Path) -> list[str]:
    """Images of ``path`` the browser could not decode (natural size 0) or that are blank."""
    page, _ = open_page(browser, path)
    page.wait_for_load_state("load")
    images = page.eval_on_selector_all(
        "img",
        "imgs => imgs.map(i => [i.getAttribute('src'), i.src, i.complete, i.naturalWidth, i.naturalHeight])",
    )
    page.close()
    bad = []
    for raw, resolved, complete, width, height in images:
        if not complete or width == 0 or height == 0:
            bad.append(f"{path.name}: {raw} did not decode ({width} x {height})")
            continue
        file = Path(unquote(urlparse(resolved).path))
        if _blank(file.read_bytes()):
            bad.append(f"{path.name}: {raw} is blank")
    return bad
