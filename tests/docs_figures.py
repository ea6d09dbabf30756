"""Measured figures in prose compared with the source they cite (``tests/docs_checks.py`` runs this as the
``figures`` check of README.md, docs/, ARCHITECTURE.md, CONTRIBUTING.md and the comments of conf/).

A figure (:func:`docs_checks.figures`: a number with a unit, ``k of n``, a decimal range; a list of decimals
such as per-seed accuracies; a decimal of three places or more) is read against the sources its own paragraph
or list item cites: ``BENCHMARKS.md section N`` (the table rows of that section), a kept ``results/...`` file
(its lines), a linked page (its lines) or a conf file or pyproject.toml (its values). A paragraph that cites
nothing is read against what its section (``##`` or ``###``) cites and the section's own tables; a figure with
neither has no source and fails. A page's tables are read row by row against what the row or its section
cites, never as their own source. A figure passes when one row of the cited sources holds all its numbers (a
decimal may be the row's number rounded; a range's ends and a list's members may come from two rows of one
cited BENCHMARKS.md section or of one column of a cited results file). Worded times ("about ten minutes",
"half an hour") are refused: they cannot be compared with anything, so the prose states the measured figure
and cites it. Definitions that look like figures (a 95% interval, chance's 25%) are not measurements.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from docs_checks import ROOT, Sources, _given, _numbers, figures, prose, table_rows

CITED_SECTIONS = re.compile(
    r"BENCHMARKS(?:\.md)?\]?(?:\([^)]*\))?,?\s+sections?\s(\d+)((?:(?:,| and|, and)\s\d+)*)"
)
CITED_FILES = re.compile(r"(?<![\w/])(results/[\w./-]+\.(?:md|csv)|conf/[\w./-]+\.yaml|pyproject\.toml)\b")
LINKED_PAGES = re.compile(r"\]\((?!https?:)([\w./-]+\.md)(?:#[\w-]*)?\)")
DEFINITIONS = re.compile(
    r"95%\s(?:[\w-]+\s){0,2}(?:interval|bound|half-width|confidence|spread)|\(95%\)"
    r"|chance\s\(25%\)|chance,?\s(?:is\s)?25%|\bblock \d+ of \d+",
    re.I,
)  # a confidence level, chance on four options, a position in the model: not measurements
NUMBER_WORDS = r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|sixty"
WORDED_TIME = re.compile(
    rf"\b(?:(?:{NUMBER_WORDS}|half an?|half a|a few|several|a couple of) (?:seconds?|minutes?|hours?|days?)"
    rf"|(?:about|under|over|nearly|roughly|within|in) (?:a|an) (?:minute|hour)"
    rf"|(?:about|under|over|nearly|roughly) a second)\b",
    re.I,
)


@dataclass(frozen=True)
class Citations:
    """What one piece of prose cites: BENCHMARKS.md section numbers, kept results files, linked pages."""

    sections: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()
    pages: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.sections or self.files or self.pages)

    def __str__(self) -> str:
        named = [f"BENCHMARKS.md section {s}" for s in sorted(self.sections)]
        return ", ".join(named + sorted(self.files | self.pages))


def citations(text: str) -> Citations:
    """The sources ``text`` cites (BENCHMARKS.md named without a section number cites the whole page)."""
    sections = {n for m in CITED_SECTIONS.finditer(text) for n in re.findall(r"\d+", m.group(0))}
    pages = {p for p in LINKED_PAGES.findall(text) if not (sections and p.endswith("BENCHMARKS.md"))}
    if not sections and re.search(r"\bBENCHMARKS\.md\b", text):
        pages.add("BENCHMARKS.md")  # named without a section: every row
    return Citations(frozenset(sections), frozenset(CITED_FILES.findall(text)), frozenset(pages))


def benchmark_rows(section: str, root: Path = ROOT) -> list[frozenset[str]]:
    """The numbers of each table row of BENCHMARKS.md's ``## <section>.`` (every row when ``section`` is
    ``"*"``)."""
    text = (root / "BENCHMARKS.md").read_text(encoding="utf-8")
    parts = re.split(r"\n(?=## )", text)
    chosen = parts if section == "*" else [p for p in parts if p.startswith(f"## {section}.")]
    return [_numbers(row) for part in chosen for row in table_rows(part)]


def _file_lines(path: Path) -> list[frozenset[str]]:
    """The numbers of each line of a kept file; of a YAML or TOML file, its values only (a comment is
    prose)."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.suffix in (".yaml", ".toml"):
        lines = [re.sub(r"(?:^|\s)#.*$", "", line) for line in lines]
    return [_numbers(line) for line in lines]


def _file_columns(path: Path) -> list[frozenset[str]]:
    """The numbers of each column of a kept results file's tables (Markdown ``|`` or CSV ``,`` cells): a
    range's ends are the smallest and largest of one column, not any two numbers of the file."""
    if not path.is_file() or path.suffix not in (".md", ".csv"):
        return []
    sep = "|" if path.suffix == ".md" else ","
    columns: dict[int, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if path.suffix == ".md" and not line.lstrip().startswith("|"):
            continue
        for k, cell in enumerate(line.strip().strip("|").split(sep)):
            columns.setdefault(k, set()).update(_numbers(cell))
    return [frozenset(c) for c in columns.values()]


def cited_sources(cited: Citations, base: Path, root: Path = ROOT) -> Sources:
    """The rows ``cited`` names: BENCHMARKS.md sections' rows and results files' lines (each section and
    each results table column also as one group, for a range's ends), linked pages' lines (relative to
    ``base``, the citing file's folder) and conf files' values."""
    rows, tables = [], []
    for section in cited.sections:  # a range spans the rows it cites, minimum to maximum (BENCHMARKS.md)
        rows += benchmark_rows(section, root)
        tables.append(frozenset().union(*benchmark_rows(section, root)))
    for name in cited.files:
        rows += _file_lines(root / name)
        tables += _file_columns(root / name)
    for page in cited.pages:
        path = (base / page).resolve()
        rows += benchmark_rows("*", root) if path.name == "BENCHMARKS.md" else _file_lines(path)
    return Sources(tuple(rows), tuple(tables))


def sections(text: str) -> list[str]:
    """``text`` cut before each ``##`` or ``###`` heading."""
    return re.split(r"\n(?=#{2,3} )", text)


def units(text: str) -> list[str]:
    """A section's prose cut into paragraphs and list items (code blocks reduced to their comments, tables
    left out: :func:`docs_checks.prose`)."""
    return [u for u in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )", prose(text)) if u.strip()]


BARE_DECIMAL = re.compile(r"(?<![\w.^/=-])(?<!= )\d+\.\d{3,}(?![\w%-]|\.\d| ?- ?\d)")  # "largest R 0.0085."
DECIMAL = r"\d+\.\d{2,}"
DECIMAL_LIST = re.compile(
    rf"(?<![\w.^/=-]){DECIMAL}(?:(?:,? and |, | / ){DECIMAL})+(?![\w%-]|\.\d| ?- ?\d)"
)  # "model A 1.00, 0.98, 0.93 and 0.90": one figure, all its numbers from one source row or column


def measured(unit: str) -> list[str]:
    """The figures of ``unit`` that are measurements: :func:`docs_checks.figures`, lists of decimals
    (:data:`DECIMAL_LIST`, unitless accuracies and shares) and decimals of three places or more, in order
    (definitions such as a 95% interval left out)."""
    unit = DEFINITIONS.sub("", unit)
    found = figures(unit)
    for pattern in (DECIMAL_LIST, BARE_DECIMAL):
        more = [m.group(0) for m in pattern.finditer(prose(unit))]
        found += [m for m in more if not any(m in f for f in found)]  # a list's decimal is part of it
    return found


def check_cited_figures(
    text: str, base: Path, root: Path = ROOT, values: tuple[frozenset[str], ...] = ()
) -> list[str]:
    """Every measured figure is given by the sources its paragraph cites, else by its section's sources and
    tables (and ``values``: a conf file's own values); a table's figures by the sources their row or section
    cites (:func:`check_table_figures`); one with no source at all fails; no worded times."""
    worded = WORDED_TIME.finditer(prose(text))
    problems = [f"{m.group(0)!r}: a worded time; state the measured figure and cite it" for m in worded]
    for section in sections(text):
        around = citations(section)
        own = values + tuple(_numbers(row) for row in table_rows(section))
        for unit in units(section):
            problems += _unsourced(measured(unit), citations(unit) or around, own, base, root)
        problems += check_table_figures(section, around, base, root)
    return problems


def _unsourced(
    found: list[str], cited: Citations, own: tuple[frozenset[str], ...], base: Path, root: Path
) -> list[str]:
    """The figures of ``found`` that neither the sources ``cited`` names nor the rows ``own`` give."""
    if found and not (cited or own):
        why = "cites no source (a BENCHMARKS.md section, a results/ or conf/ file, or a page)"
        return [f"{f!r}: {why}" for f in found]
    sources = cited_sources(cited, base, root)
    given = Sources(sources.rows + own, sources.tables)
    where = str(cited) or "its section's tables or the file's own values"
    return [f"{f!r}: not in the source it cites ({where})" for f in _missing(found, given)]


def tables(section: str) -> list[list[str]]:
    """Each Markdown table of ``section`` as its lines, header first."""
    found, current = [], []
    for line in [*section.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            current.append(line)
        elif current:
            found, current = [*found, current], []
    return found


def row_citations(row: str, header: str) -> Citations:
    """What a table row cites; under a header naming BENCHMARKS.md, a bare ``section N`` is its section."""
    cited = citations(row)
    if "BENCHMARKS.md" in header:
        named = frozenset(re.findall(r"\bsections? (\d+)", row))
        cited = Citations(cited.sections | named, cited.files, cited.pages)
    return cited


def check_table_figures(section: str, around: Citations, base: Path = ROOT, root: Path = ROOT) -> list[str]:
    """A page's tables are not their own source: each row's figures come from what the row cites, else
    from what its section cites (its prose, never its tables); a worded time in a cell fails as in prose."""
    problems = []
    for table in tables(section):
        for row in table[2:]:
            cells = " ; ".join(c.strip() for c in row.strip().strip("|").split("|"))
            worded = [m.group(0) for m in WORDED_TIME.finditer(cells)]
            problems += [f"{w!r}: a worded time; state the measured figure and cite it" for w in worded]
            problems += _unsourced(measured(cells), row_citations(row, table[0]) or around, (), base, root)
    return problems


def _missing(found: Iterable[str], sources: Sources) -> list[str]:
    """The figures of ``found`` that no row of ``sources`` gives (a range: both ends in one row, or as the
    extremes of one results file)."""
    missing = []
    for figure in found:
        numbers = _numbers(figure)
        spans = re.search(r"\d ?- ?\d", figure) or DECIMAL_LIST.fullmatch(figure)
        groups = sources.rows + (sources.tables if spans else ())
        if not any(all(_given(n, group) for n in numbers) for group in groups):
            missing.append(figure)
    return missing


def figures_check(root: Path = ROOT) -> Callable[[str, Path], list[str]]:
    """The ``figures`` check as ``check(text, path)``."""
    return lambda text, path: check_cited_figures(
        text, path.parent, root, tuple(_file_lines(path)) if path.suffix == ".yaml" else ()
    )


COST_HEADER = "cost (BENCHMARKS.md)"


def check_cost_column(text: str, base: Path = ROOT / "docs", root: Path = ROOT) -> list[str]:
    """The experiment table's :data:`COST_HEADER` column: every row has a cell, either "not measured" or
    figures that the BENCHMARKS.md sections it names (``section N``) or the page it links give."""
    table = re.search(r"^\| experiment \|.*?(?=^\s*$|\Z)", text, re.M | re.S)
    header = [c.strip() for c in table.group(0).splitlines()[0].strip("|").split("|")] if table else []
    if COST_HEADER not in header:
        return [f"the experiment table has no '{COST_HEADER}' column"]
    column, problems = header.index(COST_HEADER), []
    for row in table.group(0).splitlines()[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        name, cell = cells[0], cells[column] if len(cells) > column else ""
        found = measured(cell)
        cited = Citations(frozenset(re.findall(r"\bsections? (\d+)", cell)), pages=citations(cell).pages)
        if not cell or (found and not cited):
            problems.append(f"{name}: cost {cell!r} cites no BENCHMARKS.md section")
            continue
        if not found and "not measured" not in cell:
            problems.append(f"{name}: cost {cell!r} is neither a measured figure nor 'not measured'")
        problems += [
            f"{name}: cost {f!r} is not in {cited}" for f in _missing(found, cited_sources(cited, base, root))
        ]
    return problems
