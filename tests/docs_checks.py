"""Facts in the user-facing pages (README.md, docs/*.md) checked against the project.

Each ``check_*`` takes Markdown text (and what it is checked against) and returns the problems found, as
``"<what>: <why>"`` lines; ``tests/foundation/test_foundation_docs.py`` runs every one over every page and
plants a defect of each kind to see it fail. Kinds: a ``conf/`` or other project file that does not exist,
a config key that is not in the composed config, an ``xurs`` subcommand or flag the CLI does not have, a
test file that does not exist, a DVC stage that does not exist, a commit hash, a project issue number, a
note about one particular run, and an experiment of ``conf/experiment/`` missing from the one table.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xurs_pipeline.contracts import ARTIFACTS

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
EXPERIMENT_TABLE = ROOT / "docs" / "configuration.md"  # the one table of every experiment
SECTIONS = ("data", "model", "train", "attribution", "evaluation", "paths")
FILE_SUFFIXES = ("gguf", "json", "jsonl", "yaml", "py", "parquet", "safetensors", "md", "html", "csv", "tex",
                 "png", "txt", "lock", "log", "toml", "cff")  # fmt: skip
PROJECT_SUFFIXES = (
    "yaml",
    "py",
    "md",
    "toml",
    "cff",
    "txt",
    "json",
)  # files a page may cite as the project's
OUTPUTS = tuple(a.path for a in ARTIFACTS.values())  # a run's outputs, relative to data/ or results/
MISSPELT = re.compile(r"did you mean|misspel|unknown key|typo", re.I)  # lines that show a refused key
RUN_NOTES = (
    r"load average", r"beside another (run|pipeline|job)", r"was not kept", r"stopped for time",
    r"time limit ended", r"\bthis machine\b", r"lightly loaded", r"heavily shared", r"\bXeon\b", r"\bEPYC\b",
    r"in this session", r"on a shared one", r"what was tried",
)  # fmt: skip


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
        for m in re.finditer(rf"(?<![\w./<>{{}}*$-])([A-Za-z0-9_][\w.-]*(?:/[\w.-]+)+\.(?:{exts}))\b", span):
            found.add(m.group(1))
    return found


def check_files(text: str, root: Path = ROOT) -> list[str]:
    """Project files named with a directory (``conf/data/x.yaml``, ``tests/foo/test_x.py``,
    ``xurs_pipeline/...``) must exist: relative to the root, or (Python modules) to ``xurs_pipeline/``.
    Outputs of a run (``data/...``, ``results/...`` other than committed files) are not checked here."""
    problems = []
    for path in sorted(_paths(code_spans(text)) | set(re.findall(r"\]\((?!https?:)([^)#\s]+\.\w+)", text))):
        clean = path.removeprefix("../")
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
    """No commit hashes: 7-40 hex digits with both a digit and a letter."""
    found = re.findall(r"(?<![\w-])([0-9a-f]{7,40})(?![\w-])", text)
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


def check_run_notes(text: str) -> list[str]:
    """No notes about one particular run (machine names, load, what was kept or stopped): BENCHMARKS.md
    holds measurements with their machine, the git log the story."""
    return [f"{m.group(0)!r}: a note about a particular run" for p in RUN_NOTES
            for m in re.finditer(p, text, re.I)]  # fmt: skip


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
