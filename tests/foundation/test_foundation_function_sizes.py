"""bench/function_sizes.py counts what the house rule bounds: functions of 50+ lines and with 8+
parameters, methods and nested functions included, ``self``/``cls`` left out, the band of 40-49 lines
below them, and a package's lines; bench/format_skips.py counts the lines kept out of ``ruff format``. The
library keeps the bars (at most 8 long, 4 wide, 22 in the band; the swap package at most 2,069 lines; at
most 30 skipped lines in the tree), each check failing on a planted package or tree one over."""

from __future__ import annotations

from pathlib import Path

from bench_scripts import load_bench_script

sizes = load_bench_script("function_sizes")
skips = load_bench_script("format_skips")

ROOT = Path(__file__).resolve().parents[2]
MAX_LONG, MAX_WIDE, MAX_BAND = 8, 4, 22
MAX_SKIPPED = 30
SWAP_PACKAGE = ROOT / "xurs_pipeline" / "evaluation" / "swap"
SWAP_PACKAGE_MAX_LINES = 2069  # its size when every verdict came to be read off one ledger

SOURCE = (
    """
class A:
    def method(self, a, b, c, d, e, f, g):
        return a

    @classmethod
    def wide(cls, a, b, c, d, e, f, g, *rest, **named):
        def inner(x):
            return x
        return inner
"""
    + "\ndef long(a, /, b, *, c):\n"
    + "    x = 1\n" * 48
    + "    return x\n"
    + "\ndef banded():\n"
    + "    x = 1\n" * 38
    + "    return x\n"
)


def test_lines_and_parameters_are_counted() -> None:
    found = {f.name: f for f in sizes.functions(SOURCE, "demo.py")}
    assert (found["method"].params, found["wide"].params, found["inner"].params) == (7, 9, 1)
    assert (found["long"].lines, found["long"].params) == (50, 3)
    assert (found["method"].lines, found["banded"].lines) == (2, 40)
    counted = sizes.report(list(found.values()))
    assert [f.name for f in counted.long] == ["long"]
    assert [f.name for f in counted.wide] == ["wide"]
    assert [f.name for f in counted.band] == ["banded"]
    assert "functions of 50+ lines: 1" in counted.text
    assert "9 params demo.py:7 wide" in counted.text
    assert "functions of 40-49 lines: 1" in counted.text


def test_limits_fail_when_exceeded(tmp_path, capsys) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text(SOURCE)
    assert sizes.main([str(package), "--max-long", "1", "--max-wide", "1", "--max-band", "1"]) == 0
    assert sizes.main([str(package), "--max-long", "0"]) == 1
    assert sizes.main([str(package), "--max-wide", "0"]) == 1
    assert sizes.main([str(package), "--max-band", "0"]) == 1
    assert "pkg/mod.py:" in capsys.readouterr().out


def test_the_library_keeps_the_size_bars(capsys) -> None:
    bars = ["--max-long", str(MAX_LONG), "--max-wide", str(MAX_WIDE), "--max-band", str(MAX_BAND)]
    assert sizes.main([str(ROOT / "xurs_pipeline"), *bars]) == 0, capsys.readouterr().out


def test_the_swap_package_keeps_its_line_bar(tmp_path, capsys) -> None:
    files = sorted(SWAP_PACKAGE.glob("*.py"))
    assert sizes.package_lines(SWAP_PACKAGE) == sum(len(f.read_bytes().splitlines()) for f in files)
    assert sizes.main([str(SWAP_PACKAGE), "--max-lines", str(SWAP_PACKAGE_MAX_LINES)]) == 0, (
        capsys.readouterr().out
    )
    capsys.readouterr()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "big.py").write_text("x = 1\n" * SWAP_PACKAGE_MAX_LINES)
    (package / "one_more.py").write_text("y = 2\n")
    assert sizes.main([str(package), "--max-lines", str(SWAP_PACKAGE_MAX_LINES)]) == 1
    assert f"lines of .py files: {SWAP_PACKAGE_MAX_LINES + 1}" in capsys.readouterr().out
    assert sizes.main([str(package), "--max-lines", str(SWAP_PACKAGE_MAX_LINES + 1)]) == 0


def marked(line: str) -> str:
    """``line`` with ruff's skip comment (spelled from parts so that a grep for it skips this file)."""
    return f"{line}  # fmt:{' '}skip\n"


def test_skip_comments_are_counted_and_text_is_not() -> None:
    source = marked("x = [1, 2]") + f"y = {marked('').strip()!r}\n" + "# fmt:skip\n" + marked("z = 3")
    assert skips.skipped_lines(source) == [1, 3, 4]


def test_the_tree_keeps_the_skip_bar(tmp_path, capsys) -> None:
    assert skips.main([str(ROOT), "--max", str(MAX_SKIPPED)]) == 0, capsys.readouterr().out
    for folder in skips.FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "tests" / "table.py").write_text(
        "".join(marked(f"x{i} = {i}") for i in range(MAX_SKIPPED + 1))
    )
    assert skips.main([str(tmp_path), "--max", str(MAX_SKIPPED)]) == 1
    assert f"tests/table.py:{MAX_SKIPPED + 1}" in capsys.readouterr().out
