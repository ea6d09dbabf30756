"""Facts in the project's prose checked against the project: README.md and docs/*.md (the pages),
ARCHITECTURE.md, BENCHMARKS.md, CONTRIBUTING.md, the comments of conf/**/*.yaml and results/**/*.md.

Each ``check_*`` takes text (and what it is checked against) and returns the problems found, as
``"<what>: <why>"`` lines; ``tests/foundation/test_foundation_docs.py`` runs the checks that :data:`DOCS`
lists for each kind of file and plants a defect of each kind to see it fail. Kinds: a ``conf/`` or other
project file that does not exist (or lies outside the project), a config key that is not in the composed
config, an ``xurs`` subcommand or flag the CLI does not have, a test file that does not exist, a DVC stage
that does not exist, a count that disagrees with the code, a dependency version, a commit hash, a project
issue number, a note about one particular run, a measured figure that the source it cites does not give
(``tests/docs_figures.py``: a BENCHMARKS.md section's rows, a kept results file, a linked page, a conf
value) or that cites no source, a worded time, a ledger row without its command, machine or date, and an
experiment of ``conf/experiment/`` missing from the one table.
"""

from __future__ import annotations

import argparse
import itertools
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xurs_pipeline.contracts import ARTIFACTS

ROOT = Path(__file__).resolve().parents[1]


def unignored(root: Path, folder: str, suffix: str) -> tuple[Path, ...]:
    """The files ending in ``suffix`` under ``root / folder`` that git does not ignore (committed, or new and
    not ignored): a run's own outputs there (``results/tables``, ``results/html``: DVC's ``.gitignore``)
    are not the project's prose. Outside a git checkout, every such file."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", folder],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return tuple(sorted((root / folder).rglob(f"*{suffix}")))
    return tuple(sorted(root / name for name in listed if name.endswith(suffix) and (root / name).is_file()))


PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
EXPERIMENT_TABLE = ROOT / "docs" / "configuration.md"  # the one table of every experiment
SECTIONS = ("data", "model", "train", "attribution", "evaluation", "paths")
FILE_SUFFIXES = (
    "gguf",
    "json",
    "jsonl",
    "yaml",
    "py",
    "parquet",
    "safetensors",
    "md",
    "html",
    "csv",
    "tex",
    "png",
    "txt",
    "lock",
    "log",
    "toml",
    "cff",
)
PROJECT_SUFFIXES = (
    "yaml",
    "py",
    "md",
    "toml",
    "cff",
    "txt",
    "json",
    "tex",
)  # what prose cites as the project's
OUTPUTS = tuple(a.path for a in ARTIFACTS.values())  # a run's outputs, relative to data/ or results/
MISSPELT = re.compile(r"did you mean|misspel|unknown key|typo", re.I)  # lines that show a refused key
RUN_NOTES = (
    r"load average",
    r"beside (another|one other|the same other) (run|pipeline|job)",
    r"was not kept",
    r"stopped (after [^.]*?)?for (the session's )?time",
    r"time limit ended",
    r"lightly loaded",
    r"heavily shared",
    r"\b(in|this|the next|the previous|the) session\b",
    r"on a shared one",
    r"what was tried",
    r"\blent\b",
    r"a first attempt",
    r"ran out of (CPU|device|time)",
    r"\bnice(-| )\d+",
    r"not being logged",
    r"was cut off",
    r"\bwe tried\b",
)
MACHINE_NOTES = (r"\bthis machine\b", r"\bXeon\b", r"\bEPYC\b")  # machines are named in BENCHMARKS.md only
DEPENDENCIES = ("transformers", "accelerate", "dvc", "hydra-core", "torch", "peft", "captum", "PyTorch")


def code_spans(text: str) -> list[str]:
    """Inline code and fenced code blocks (with ``\\`` continuations joined), where names are written."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    rest = re.sub(r"```.*?```", "", text, flags=re.S)
    spans = [b.replace("\\\n", " ") for b in blocks] + re.findall(r"`([^`\n]+)`", rest)
    return spans


def _paths(spans: Iterable[str]) -> set[str]:
    exts = "|".join(PROJECT_SUFFIXES)
    found = set()
    for span in spans:
        for m in re.finditer(
            rf"(?<![\w./<>{{}}*$-])((?:\.\./)*[A-Za-z0-9_][\w.-]*(?:/[\w.-]+)+\.(?:{exts}))\b", span
        ):
            found.add(m.group(1))
    return found


def check_files(text: str, root: Path = ROOT, base: Path = ROOT) -> list[str]:
    """Project files named with a directory (``conf/data/x.yaml``, ``tests/foo/test_x.py``,
    ``xurs_pipeline/...``) must exist: relative to the root, or (Python modules) to ``xurs_pipeline/``.
    Outputs of a run (``data/...``, ``results/...`` other than committed files) are not checked here. A
    ``../`` path is read from ``base`` (the file's folder) and must stay inside the project."""
    problems = []
    for path in sorted(_paths(code_spans(text)) | set(re.findall(r"\]\((?!https?:)([^)#\s]+\.\w+)", text))):
        if path.startswith("../") and not (base / path).resolve().is_relative_to(root.resolve()):
            problems.append(f"{path}: outside the project")
            continue
        clean = path.removeprefix("../")
        if re.search(r"(^|/)foo\b", clean):
            continue  # a placeholder in an example (stages/foo.py)
        if clean.startswith(("data/", "results/", ".venv/", "dvc_plots/", *OUTPUTS)) and not clean.endswith(
            ".yaml"
        ):
            continue  # a run's output
        candidates = [root / clean, root / "docs" / clean]
        if clean.endswith(".py"):
            candidates.append(root / "xurs_pipeline" / clean)
        if not any(c.exists() for c in candidates):
            problems.append(f"{path}: no such file in the project")
    return problems


def config_keys(composed: Mapping[str, Any], prefix: str = "") -> set[str]:
    """Every dotted key of a composed config, sections included."""
    keys = set()
    for k, v in composed.items():
        keys.add(prefix + k)
        if isinstance(v, Mapping):
            keys |= config_keys(v, f"{prefix}{k}.")
    return keys


def _is_module(dotted: str, root: Path = ROOT) -> bool:
    """``attribution.model.set_precision``: a module of xurs_pipeline/ (or a name in one), not a key."""
    parts = dotted.split(".")
    return any(
        (root / "xurs_pipeline" / Path(*parts[:i])).with_suffix(".py").is_file()
        for i in range(2, len(parts) + 1)
    )


def check_keys(text: str, keys: set[str]) -> list[str]:
    """Dotted config keys in code (``data.medqa_path``, ``evaluation.numerics.max_residual_max``) must be keys
    of the composed config; file names (``model.gguf``) and paths are not keys."""
    sections = "|".join(SECTIONS)
    problems = set()
    shown_refused = "\n".join(line for line in text.splitlines() if MISSPELT.search(line))
    for span in code_spans(text):
        for m in re.finditer(
            rf"(?<![\w./=$:-])((?:{sections})(?:\.[a-z_][a-z0-9_]*)+)\b(?![/(.-]?\w*\()", span
        ):
            key = m.group(1)
            if key.rsplit(".", 1)[-1] in FILE_SUFFIXES or key.split(".")[1] in FILE_SUFFIXES:
                continue
            if _is_module(key):
                continue
            if key not in keys and key not in shown_refused:
                problems.add(f"{key}: not a config key")
    return sorted(problems)


def cli_options(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """``xurs`` subcommand -> its long options (``--help`` included)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {o for a in p._actions for o in a.option_strings} for name, p in sub.choices.items()}


def check_cli(text: str, options: Mapping[str, set[str]]) -> list[str]:
    """Every ``xurs <subcommand>`` in code must exist, and every ``--flag`` written after it on the same
    command (up to ``#``, ``&&``, ``|``, ``;``) must be one of its options."""
    problems = set()
    for span in code_spans(text):
        for line in span.splitlines():
            for m in re.finditer(r"(?<![\w-])xurs ([a-z][a-z-]*)([^#&|;]*)", line):
                name, rest = m.group(1), m.group(2)
                if name not in options:
                    problems.add(f"xurs {name}: no such subcommand")
                    continue
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest):
                    if flag not in options[name]:
                        problems.add(f"xurs {name} {flag}: no such option")
    return sorted(problems)


def check_tests(text: str, root: Path = ROOT) -> list[str]:
    """Test files named anywhere (``tests/.../test_x.py``) must exist."""
    named = set(re.findall(r"(?<![\w/])(tests/[\w/]+\.py)", text))
    return [f"{t}: no such test file" for t in sorted(named) if not (root / t).is_file()]


def check_stages(text: str, stages: Iterable[str]) -> list[str]:
    """Stages named as ``-m stages <name>``, ``dvc repro <name>`` or ``dvc exp run <name>`` must exist."""
    known, problems = set(stages), set()
    for span in code_spans(text):
        named = re.findall(r"-m\s+stages\s+([a-z_]+)", span)
        named += re.findall(
            r"dvc (?:repro|exp run)((?: --?[\w-]+(?:[ =][\w.'=,-]+)?)*) ([a-z_]+)(?=\s|$)", span
        )
        for n in named:
            name = n[1] if isinstance(n, tuple) else n
            if name not in known and name not in ("py",):
                problems.add(f"{name}: no such DVC stage")
    return sorted(problems)


def check_hashes(text: str) -> list[str]:
    """No commit hashes: 7-40 hex digits with both a digit and a letter (``config <hash>`` is allowed)."""
    found = re.findall(
        r"(?<![\w-])(?<!config )([0-9a-f]{7,40})(?![\w-])", text
    )  # a config hash names a config
    return [f"{h}: looks like a commit hash" for h in found if re.search(r"\d", h) and re.search(r"[a-f]", h)]


def check_issues(text: str) -> list[str]:
    """No project issue numbers (``issue 17``, ``#17``); another project's, cited by its repository
    (``owner/name issue N``), is allowed."""
    problems = []
    for m in re.finditer(r"(?<![\w/])(\S+ )?(issues? #?\d+|#\d+\b)", text, re.I):
        if m.group(1) and re.fullmatch(r"[\w.-]+/[\w.-]+ ", m.group(1)):
            continue
        problems.append(f"{m.group(2)}: a project issue number")
    return problems


def check_run_notes(text: str, patterns: Iterable[str] = RUN_NOTES + MACHINE_NOTES) -> list[str]:
    """No notes about one particular run (load, what was kept or stopped, sessions, machine names outside
    BENCHMARKS.md): BENCHMARKS.md holds measurements with their machine, the git log the story."""
    return [
        f"{m.group(0)!r}: a note about a particular run" for p in patterns for m in re.finditer(p, text, re.I)
    ]


def table_experiments(text: str) -> list[str]:
    """Experiment names in the first cell of the rows of every table headed ``| experiment |``."""
    names = []
    for table in re.findall(r"^\| experiment \|.*?(?=^\s*$|\Z)", text, re.M | re.S | re.I):
        for row in table.splitlines()[2:]:
            names += re.findall(r"`([\w-]+)`", row.split("|")[1])
    return names


def check_experiment_table(text: str, experiments: Iterable[str]) -> list[str]:
    """The one table lists every experiment of ``conf/experiment/`` and no other."""
    listed = set(table_experiments(text))
    missing = sorted(set(experiments) - listed)
    extra = sorted(listed - set(experiments))
    return [f"{e}: missing from the experiment table" for e in missing] + [
        f"{e}: in the experiment table but not in conf/experiment/" for e in extra
    ]


STATUS_HEADING = "## Status and limits"
STATUS_TOPICS = ("swap-control.md", "controlled-study.md", "paper-on-gpus.md", "positive-control.md")


def status_block(readme: str) -> str:
    """The README's "Status and limits" section ("" when there is none)."""
    if STATUS_HEADING not in readme:
        return ""
    rest = readme.split(STATUS_HEADING, 1)[1]
    return re.split(r"\n## |\n!\[", rest, maxsplit=1)[0]


def check_status(readme: str, root: Path = ROOT, first_lines: int = 15) -> list[str]:
    """The status block opens the README (within ``first_lines``), links every study page of
    :data:`STATUS_TOPICS`, and every figure in an item appears on the page that item links to."""
    block = status_block(readme)
    if not block:
        return [f"README: no '{STATUS_HEADING}' section"]
    problems = []
    if readme.splitlines().index(STATUS_HEADING) >= first_lines:
        problems.append(f"README: '{STATUS_HEADING}' is not within the first {first_lines} lines")
    problems += [f"status: no link to {t}" for t in STATUS_TOPICS if t not in block]
    for item in re.split(r"\n- ", block)[1:]:
        pages = re.findall(r"\]\(([^)#]+\.md)", item)
        texts = " ".join(
            (root / page).read_text(encoding="utf-8") for page in pages if (root / page).is_file()
        )
        for figure in re.findall(r"(?<![\w.])(\d+(?:[.,]\d+)*(?:-\d+(?:\.\d+)*)?%?(?: of \d+)?)", item):
            if figure not in texts and not re.fullmatch(r"\d", figure):
                problems.append(f"status: {figure!r} is not on {', '.join(pages) or 'a linked page'}")
    return problems


# Counts and lists the prose states about the code: (pattern whose group 1 is the count, what it counts).
NUMBER_NAMES = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
)
NUMBER_WORDS = {w: i for i, w in enumerate(NUMBER_NAMES)}
COUNT_CLAIMS = (
    (r"\b(\w+) DVC stages\b", "stages"),
    (r"\bthe (\w+) stages of\b", "stages"),
    (r"\bruns the (\w+) stages\b", "stages"),
    (r"\bthe (\w+) evaluation keys\b", "mask_eval keys"),
    (r"\b(\w+) experiments (?:in|of) `conf/experiment/?`", "experiments"),
    (r"\b(\w+) prompt sources\b", "prompt sources"),
)
LIST_CLAIMS = ((r"`source` \(([\w/]+)\)", "prompt sources"),)  # a list written a/b/c


def _count(word: str) -> int | None:
    word = word.lower().replace(",", "")
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word)


def check_counts(text: str, facts: Mapping[str, Any]) -> list[str]:
    """Every count of :data:`COUNT_CLAIMS` equals the project's (``facts[name]``: a number or a
    collection), and every list of :data:`LIST_CLAIMS` names exactly the collection's members."""
    problems = []
    for pattern, name in COUNT_CLAIMS:
        true = facts[name] if isinstance(facts[name], int) else len(facts[name])
        for m in re.finditer(pattern, text, re.I):
            said = _count(m.group(1))
            if said is not None and said != true:
                problems.append(f"{m.group(0)!r}: {name} are {true}")
    for pattern, name in LIST_CLAIMS:
        for m in re.finditer(pattern, text):
            if set(m.group(1).split("/")) != set(facts[name]):
                problems.append(f"{m.group(0)!r}: {name} are {'/'.join(facts[name])}")
    return problems


def check_versions(text: str) -> list[str]:
    """No dependency version in prose (it goes stale; pyproject.toml and README's install pin them, and
    BENCHMARKS.md's machines record what a figure was measured with)."""
    names = "|".join(re.escape(d) for d in DEPENDENCIES)
    return [f"{m.group(0)!r}: a dependency version" for m in re.finditer(rf"\b(?:{names}) \d+\.\d+", text)]


# Measured figures: a number (or range) with a unit of time, memory, speed-up or share, a count of tests,
# gradient evaluations, draws or forwards, or "k of n" (one computed in place, "= 90%", or a bound,
# "<= 4,096", is not a measurement). Each must be given by the source it cites (tests/docs_figures.py); a
# ledger or results file's own prose, by its own table rows.
NUM = r"\d[\d,]*(?:\.\d+)?"
UNIT = r"\s?(?:ms|s|min|minutes|hours?|GiB|MiB|GB|tests|(?:gradient\s)?evaluations|draws|forwards)\b|%|x\b"
FIGURE = re.compile(
    rf"(?<![\w.,^/=-])(?<!= )({NUM}(?: ?- ?{NUM})?)(?:{UNIT}|"
    rf"\sof\s({NUM})\b(?!\s(?:blocks|layers|tokens|the|its|which)\b))"
)
DECIMAL_RANGE = re.compile(
    rf"(?<![\w.^/=-])\d+\.\d+ ?- ?\d+\.\d+(?![\w.%-])(?!{UNIT})"
)  # "accuracy 0.82-0.86"


def _numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", "").rstrip(".") for n in re.findall(NUM, text))


def _comments(block: re.Match) -> str:
    """A fenced code block reduced to its ``#`` comments (what it says in words)."""
    return "\n".join(re.findall(r"(?:^|\s)#\s(.*)$", block.group(0), re.M))


def prose(text: str) -> str:
    """Markdown without code (but with code blocks' comments) and without table rows: the figures a
    sentence or a command's comment states."""
    text = re.sub(r"```.*?```", _comments, text, flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))


README_WORDS = 2300  # README.md's words outside code, at most


def prose_words(text: str) -> int:
    """Words outside code: whitespace-separated tokens once fenced code blocks are removed (inline code,
    tables, links and HTML comments count; ``wc -w`` of the rest)."""
    return len(re.sub(r"```.*?```", " ", text, flags=re.S).split())


def check_length(text: str, limit: int = README_WORDS) -> list[str]:
    words = prose_words(text)
    return [f"README: {words} words outside code, more than {limit}"] if words > limit else []


def figures(text: str) -> list[str]:
    """The measured figures of a text's prose (:data:`FIGURE`, :data:`DECIMAL_RANGE`), in order."""
    text = prose(text)
    found = [m for pattern in (FIGURE, DECIMAL_RANGE) for m in pattern.finditer(text)]
    return [m.group(0) for m in sorted(found, key=lambda m: m.start())]


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("|")]


@dataclass(frozen=True)
class Sources:
    """Where figures may come from: ``rows`` (every number of a figure in one row) and ``tables`` (the
    numbers of a whole results file: a range's ends may be the minimum and maximum of two of its rows)."""

    rows: tuple[frozenset[str], ...]
    tables: tuple[frozenset[str], ...] = ()


def _given(number: str, row: frozenset[str]) -> bool:
    """``number`` is in ``row`` as written, or (a decimal) as one of its numbers rounded to its places."""
    if number in row:
        return True
    if "." not in number:
        return False
    places = len(number.split(".")[1])
    return any(
        "." in n and len(n.split(".")[1]) > places and round(float(n), places) == float(number) for n in row
    )


def check_figures(text: str, sources: Sources) -> list[str]:
    """Every measured figure of the prose has a source row holding all its numbers (a range: both ends, in
    one row, or as two rows of one results file)."""
    problems = []
    for figure in figures(text):
        numbers = _numbers(figure)
        groups = sources.rows + (sources.tables if re.search(r"\d ?- ?\d", figure) else ())
        if not any(all(_given(n, group) for n in numbers) for group in groups):
            problems.append(f"{figure!r}: no kept file gives it (BENCHMARKS.md ledger, results/)")
    return problems


def check_own_figures(text: str) -> list[str]:
    """A ledger or results file: every figure of its prose is in one of its own table rows."""
    return check_figures(text, Sources(tuple(_numbers(row) for row in table_rows(text))))


def benchmark_sections(root: Path = ROOT) -> set[str]:
    """The numbers of BENCHMARKS.md's ``## N.`` sections."""
    return set(re.findall(r"^## (\d+)\.", (root / "BENCHMARKS.md").read_text(encoding="utf-8"), re.M))


def check_benchmark_sections(text: str, sections: set[str]) -> list[str]:
    """``BENCHMARKS.md section 8`` (or ``[BENCHMARKS.md](...), sections 19 and 13``) names a section that
    exists."""
    problems = []
    for m in re.finditer(r"BENCHMARKS(?:\.md)?\]?(?:\([^)]*\))?,? sections? (\d+)(?: and (\d+))?", text):
        problems += [
            f"BENCHMARKS.md section {n}: no such section" for n in m.groups() if n and n not in sections
        ]
    return problems


LEDGER_HEADER = "| what | command | machine | figure | date |"
MACHINES_HEADING = "## Machines"


def machine_names(text: str) -> list[str]:
    """The first column of the table under BENCHMARKS.md's ``## Machines``."""
    section = text.split(MACHINES_HEADING, 1)[1].split("\n## ", 1)[0] if MACHINES_HEADING in text else ""
    return [row.split("|")[1].strip() for row in table_rows(section)[2:]]


def check_ledger(text: str) -> list[str]:
    """BENCHMARKS.md: every numbered section (``## N.``) opens with a ledger table (:data:`LEDGER_HEADER`);
    every ledger row names a command (in backticks), a machine of ``## Machines`` and a date (YYYY-MM-DD)."""
    machines, problems = machine_names(text), []
    if not machines:
        problems.append("BENCHMARKS.md: no machines table")
    for section in re.split(r"\n(?=## \d)", text)[1:]:
        title = section.splitlines()[0]
        if LEDGER_HEADER not in section:
            problems.append(f"{title}: no ledger table ({LEDGER_HEADER})")
            continue
        ledger = section.split(LEDGER_HEADER, 1)[1].split("\n\n", 1)[0]
        for row in table_rows(ledger)[1:]:
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) != 5:
                problems.append(f"{title}: a ledger row without 5 cells: {row[:60]}")
                continue
            what, command, machine, _figure, date = cells
            if "`" not in command:
                problems.append(f"{title}: {what[:40]!r} names no command")
            if not any(machine.startswith(m) for m in machines):
                problems.append(f"{title}: {what[:40]!r}: machine {machine!r} is not in {MACHINES_HEADING}")
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
                problems.append(f"{title}: {what[:40]!r} has no date")
    return problems


RESULTS_INDEX = ROOT / "results" / "README.md"  # every kept results file, with the command that wrote it


def results_index(text: str) -> dict[str, str]:
    """Kept file (``results/...``) -> the command cell of its row in the index."""
    rows = {}
    for row in table_rows(text)[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        for path in re.findall(r"`(results/[^`]+)`", cells[0]):
            rows[path] = cells[1] if len(cells) > 1 else ""
    return rows


def check_results_file(text: str, path: Path, root: Path = ROOT) -> list[str]:
    """A committed results file is listed in results/README.md with the command that wrote it (in
    backticks), and states no figure its own tables do not give; the index lists only files that exist."""
    index_text = (root / "results" / "README.md").read_text(encoding="utf-8")
    index = results_index(text if path.name == "README.md" else index_text)
    if path.name == "README.md":
        missing = [
            f"{p}: listed in results/README.md but not in the project"
            for p in index
            if not (root / p).exists()
        ]
        return missing + check_own_figures(text)
    rel = path.relative_to(root).as_posix()
    if not re.search(r"`(?:xurs|dvc|python) [^`]+`", index.get(rel, "")):
        return [f"{rel}: not in results/README.md with the command that wrote it"]
    return check_own_figures(text)


TABLE_SEPARATOR = re.compile(r"\s*\|(?:\s*:?-+:?\s*\|)+\s*$")
FENCED = re.compile(r"^```.*?^```", re.M | re.S)


def _cells(line: str) -> int:
    """Cells of a Markdown table line: its unescaped pipes less one (GitHub's reading)."""
    return len(re.findall(r"(?<!\\)\|", line.strip())) - 1


def check_tables(text: str) -> list[str]:
    """Every Markdown table's separator and rows have as many cells as its header (outside code blocks)."""
    lines = FENCED.sub("", text).splitlines()
    problems = []
    for i, header in enumerate(lines[:-1]):
        if not (header.lstrip().startswith("|") and TABLE_SEPARATOR.match(lines[i + 1])):
            continue
        width = _cells(header)
        for row in itertools.takewhile(lambda line: line.lstrip().startswith("|"), lines[i + 1 :]):
            if _cells(row) != width:
                problems.append(f"a table row of {_cells(row)} cells under a header of {width}: {row[:60]}")
    return problems


def yaml_comments(text: str) -> str:
    """The comments of a YAML file, one per line."""
    return "\n".join(m.group(1) for m in re.finditer(r"(?:^|\s)#(.*)$", text, re.M)) + "\n"


def _names(text: str, path: Path) -> str:
    """Where names are looked for: Markdown's code spans, or all of a YAML comment (written without them)."""
    return f"```\n{text}```\n" if path.suffix == ".yaml" else text


@dataclass(frozen=True)
class DocKind:
    """One kind of prose file: where its files are, how its prose is read, which checks it gets."""

    name: str
    paths: tuple[Path, ...]
    checks: tuple[str, ...]
    read: Callable[[str], str] = lambda text: text


NAMED = ("files", "keys", "cli", "stages", "counts", "hashes", "issues", "tables")  # every kind of file
COMMON = (*NAMED, "tests", "versions", "sections")
DOCS = (
    DocKind("pages", PAGES, (*COMMON, "run_notes", "figures")),
    DocKind("architecture", (ROOT / "ARCHITECTURE.md",), (*COMMON, "run_notes", "figures")),
    DocKind("contributing", (ROOT / "CONTRIBUTING.md",), (*COMMON, "run_notes", "figures")),
    DocKind("benchmarks", (ROOT / "BENCHMARKS.md",), (*NAMED, "tests", "narration", "ledger", "own_figures")),
    DocKind(
        "conf",
        tuple(sorted((ROOT / "conf").rglob("*.yaml"))),
        (*COMMON, "run_notes", "figures"),
        yaml_comments,
    ),
    DocKind("results", unignored(ROOT, "results", ".md"), (*NAMED, "narration", "results_file")),
)


def checkers(
    keys: set[str], options: Mapping[str, set[str]], stages: Iterable[str], facts: Mapping[str, Any]
) -> dict[str, Callable[[str, Path], list[str]]]:
    """Each check of :data:`DOCS` by name, as ``check(text, path) -> problems``."""
    from docs_figures import figures_check  # it reads this module's figure patterns

    sections = benchmark_sections()
    stages = tuple(stages)
    return {
        "files": lambda t, p: check_files(_names(t, p), base=p.parent),
        "keys": lambda t, p: check_keys(_names(t, p), keys),
        "cli": lambda t, p: check_cli(_names(t, p), options),
        "tests": lambda t, p: check_tests(t),
        "stages": lambda t, p: check_stages(_names(t, p), stages),
        "counts": lambda t, p: check_counts(t, facts),
        "versions": lambda t, p: check_versions(t),
        "sections": lambda t, p: check_benchmark_sections(t, sections),
        "hashes": lambda t, p: check_hashes(t),
        "issues": lambda t, p: check_issues(t),
        "run_notes": lambda t, p: check_run_notes(t),
        "narration": lambda t, p: check_run_notes(t, RUN_NOTES),
        "figures": figures_check(),
        "own_figures": lambda t, p: check_own_figures(t),
        "ledger": lambda t, p: check_ledger(t),
        "results_file": check_results_file,
        "tables": lambda t, p: check_tables(t),
    }
