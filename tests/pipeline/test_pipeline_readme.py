"""README's ``xurs explain`` lines (and docs/attribution-methods.md's), read from the page and run as printed
on the session's smoke project.

Proves: every ``xurs explain`` command of the pages' bash blocks (its record id included) and their Python
``explain(...)`` call run on a trained project and print an explanation; the record id README names is one
the default experiment, ``local``, explains (a test question without the result), so the lines paste after
command 1 too; the transcript docs/attribution-methods.md shows is what ``xurs explain`` prints today.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from smoke_project import BIN, ROOT, run_ok

from xurs_pipeline.cli import main as xurs

README = ROOT / "README.md"
TRANSCRIPT_PAGE = ROOT / "docs" / "attribution-methods.md"
PAGES = (README, TRANSCRIPT_PAGE)  # the pages whose explain lines and Python call run here


def fenced(text: str, language: str) -> list[str]:
    """The bodies of ``text``'s fenced blocks in ``language``, ``\\`` continuations joined."""
    return [b.replace("\\\n", " ") for b in re.findall(rf"```{language}\n(.*?)```", text, re.S)]


def explain_lines(text: str) -> list[list[str]]:
    """Every ``xurs explain`` command of the bash blocks, as the arguments after ``xurs`` (comments
    dropped)."""
    lines = [line for block in fenced(text, "bash") for line in block.splitlines()]
    return [shlex.split(line, comments=True)[1:] for line in lines if line.strip().startswith("xurs explain")]


def python_explain(text: str) -> str:
    """The Python block that calls ``explain(``."""
    (block,) = [b for b in fenced(text, "python") if "explain(" in b]
    return block


def test_explain_lines_are_read_from_the_readme() -> None:
    text = "x\n```bash\nxurs params a=1\nxurs explain --record-id r \\\n    --top 3   # a comment\n```\n"
    assert explain_lines(text) == [["explain", "--record-id", "r", "--top", "3"]]
    assert len(explain_lines(README.read_text(encoding="utf-8"))) >= 3
    assert len(pages_explain_lines()) < sum(len(explain_lines(p.read_text(encoding="utf-8"))) for p in PAGES)


def _record_ids(lines: list[list[str]]) -> set[str]:
    return {args[args.index("--record-id") + 1] for args in lines if "--record-id" in args}


def test_the_readme_names_a_question_the_default_experiment_explains(tmp_path: Path) -> None:
    """The ids README passes to ``--record-id`` and ``record_id=`` are test questions of ``local`` that its
    attribution explains (``attribution.result_filter``: without the result)."""
    from xurs_pipeline.config import load_params
    from xurs_pipeline.data.dataset import load_records

    named = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        named |= _record_ids(explain_lines(text)) | set(
            re.findall(r'record_id="([^"]+)"', python_explain(text))
        )
    composed = tmp_path / "params.yaml"
    run_ok([str(BIN / "xurs"), "params", "--out", str(composed), "--no-dvc-yaml", "experiment=local"], ROOT)
    params = load_params(composed)
    assert params.attribution.split == "test"
    assert params.attribution.result_filter == "without_result"
    records = load_records(params.data)
    explained = {r.record_id for r in records if r.split == "test" and not r.synthetic.has_result}
    assert named
    assert named <= explained, sorted(named - explained)
    assert "q1" not in explained  # the check can fail: an id of README's own-data example is not one of them


@pytest.fixture
def project(smoke_project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The smoke project as the working directory; the files a test writes there are removed after it."""
    before = {p for p in smoke_project.rglob("*") if p.is_file()}
    monkeypatch.chdir(smoke_project)
    yield smoke_project
    for path in {p for p in smoke_project.rglob("*") if p.is_file()} - before:
        path.unlink()


def pages_explain_lines() -> list[list[str]]:
    """Every distinct ``xurs explain`` command of :data:`PAGES`, in order (a line on two pages runs once)."""
    lines = [args for page in PAGES for args in explain_lines(page.read_text(encoding="utf-8"))]
    return [args for k, args in enumerate(lines) if args not in lines[:k]]


@pytest.mark.slow
def test_every_explain_line_runs_on_a_trained_project(project: Path, capsys) -> None:
    for args in pages_explain_lines():
        assert xurs(args) == 0, args
        out = capsys.readouterr().out
        assert re.search(r": explained answer [ABCD]", out), (args, out)
        assert "wrote " in out, args
        if "--compare" in args:
            assert f"compared with {args[args.index('--compare') + 1]}:" in out


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_python_call_runs_on_a_trained_project(project: Path, capsys, page: Path) -> None:
    exec(compile(python_explain(page.read_text(encoding="utf-8")), page.name, "exec"), {})
    assert re.search(r": explained answer [ABCD]", capsys.readouterr().out)


# The transcript: a ```text block whose first line is "$ <command>" (the smoke project's commands, then
# `xurs explain ...`), followed by what the last command prints.
TRANSCRIPT = re.compile(r"```text\n\$ ([^\n]*xurs explain [^\n]*)\n(.*?)```", re.S)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def last_digit(number: str) -> float:
    """The value of one unit in the last printed digit of ``number`` (``5.334e-02``: 1e-05; ``321``: 0, a
    count or position is exact)."""
    mantissa, _, exponent = number.partition("e")
    if "." not in mantissa:
        return 0.0 if not exponent else 10.0 ** int(exponent)
    return 10.0 ** (int(exponent or 0) - len(mantissa.split(".")[1]))


def same_output(shown: str, printed: str) -> bool:
    """``printed`` is ``shown`` word for word, its decimals equal to one unit in the last printed digit
    (float32 sums can differ there between CPUs) and its counts exactly."""
    if NUMBER.sub("#", shown) != NUMBER.sub("#", printed):
        return False
    pairs = zip(NUMBER.findall(shown), NUMBER.findall(printed), strict=True)
    return all(abs(float(a) - float(b)) <= 1.01 * last_digit(a) for a, b in pairs)


def test_transcripts_are_compared_word_for_word_and_to_the_printed_digit() -> None:
    shown = "q: explained answer B\n  R 0.0012  pass\n  1 Muzex  0.53\n"
    assert same_output(shown, shown.replace("0.0012", "0.0013"))
    assert not same_output(shown, shown.replace("0.0012", "0.0031"))
    assert not same_output(shown, shown.replace("Muzex", "Favix"))
    assert not same_output(shown, shown.replace("pass", "FAIL"))
    assert same_output("1.557e-03 at 321", "1.558e-03 at 321")
    assert not same_output("1.557e-03 at 321", "1.567e-03 at 321")
    assert not same_output("1.557e-03 at 321", "1.557e-03 at 322")


@pytest.mark.slow
def test_the_kept_transcript_is_what_explain_prints(project: Path, capsys) -> None:
    """docs/attribution-methods.md's transcript, rerun: a change of the printout, the smoke model or the
    method fails here until the page is regenerated (the failure prints the new output)."""
    (match,) = TRANSCRIPT.finditer(TRANSCRIPT_PAGE.read_text(encoding="utf-8"))
    command, shown = match.group(1), match.group(2)
    assert "experiment=smoke" in command, "the kept transcript is the smoke project's"
    args = shlex.split(command.rsplit("&& ", 1)[-1])[1:]
    assert xurs(args) == 0
    printed = capsys.readouterr().out
    assert same_output(shown, printed), f"regenerate the transcript in {TRANSCRIPT_PAGE.name}:\n{printed}"
