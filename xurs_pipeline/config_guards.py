"""Checks on a whole config tree that no section's dataclass can make (:mod:`xurs_pipeline.config` runs them).

- text: no string value may hold a line break, control or format character (a newline in
  ``experiment_name`` would end the ``%`` comment of every LaTeX table and start a live line), and the
  experiment's name is a plain label (letters, digits, ``_ . + -``) that every output format, file name and
  DVC shows as it is;
- interpolation: ``conf/`` and overrides may refer to other keys (``${train.seed}``) but not call a
  resolver (``${oc.env:HOME}``): ``params.yaml`` and every experiment commit would store this machine's
  environment;
- completeness: a composition holds every key of the schema, so a ``~key`` override or a group option taken
  from another group (``train=../experiment/local``) cannot silently drop a section to its defaults.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")
"""What ``experiment_name`` may be: a label shown as is in LaTeX, HTML, Markdown, CSV and file names."""
UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}  # control, format (zero-width, bidi), line/paragraph breaks
RESOLVER = re.compile(r"\$\{\s*[A-Za-z_][\w.]*\s*:")  # ${name:...}: a resolver call, not a key reference


def walk(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf of a config tree (list items as ``key[i]``)."""
    items = data.items() if isinstance(data, Mapping) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        where = f"{prefix}{key}" if isinstance(key, str) else f"{prefix.rstrip('.')}[{key}]"
        if isinstance(value, Mapping | list):
            yield from walk(value, f"{where}.")
        else:
            yield where, value


def first_unsafe_text(data: Mapping[str, Any]) -> str | None:
    """Why the first unsafe string of ``data`` is refused (naming its key), else None."""
    for where, value in walk(data):
        if not isinstance(value, str):
            continue
        bad = next((c for c in value if unicodedata.category(c) in UNSAFE_CATEGORIES), None)
        if bad is not None:
            return (
                f"{where}={value!r}: holds U+{ord(bad):04X} ({unicodedata.name(bad, 'a control')}); "
                "config text may not hold line breaks, control or invisible characters"
            )
    name = data.get("experiment_name")
    if isinstance(name, str) and not NAME.fullmatch(name):
        return (
            f"experiment_name={name!r}: must be 1-100 letters, digits, '_', '.', '+' or '-', starting with a "
            "letter or digit (it labels every table, page and file)"
        )
    return None


def first_resolver(data: Any) -> str | None:
    """The first ``key=value`` whose unresolved value calls a resolver (``${oc.env:...}``), else None."""
    for where, value in walk(data):
        if isinstance(value, str) and RESOLVER.search(value):
            return (
                f"{where}={value!r}: a resolver would write this machine's environment into params.yaml and "
                "every experiment's commit; write the value itself"
            )
    return None


def missing_keys(schema: Mapping[str, Any], composed: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The schema's keys (dotted; a section counts as one key when wholly absent) that ``composed`` lacks."""
    missing = []
    for key, value in schema.items():
        if key not in composed:
            missing.append(f"{prefix}{key}")
        elif isinstance(value, Mapping) and value and isinstance(composed[key], Mapping):
            missing += missing_keys(value, composed[key], f"{prefix}{key}.")
    return missing
