"""bench/function_sizes.py counts what the house rule bounds: functions of 50+ lines and with 8+
parameters, methods and nested functions included, ``self``/``cls`` left out."""

from __future__ import annotations

from bench_scripts import load_bench_script

sizes = load_bench_script("function_sizes")

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
)


def test_lines_and_parameters_are_counted() -> None:
    found = {f.name: f for f in sizes.functions(SOURCE, "demo.py")}
    assert (found["method"].params, found["wide"].params, found["inner"].params) == (7, 9, 1)
    assert (found["long"].lines, found["long"].params) == (50, 3)
    assert found["method"].lines == 2
    long, wide, text = sizes.report(list(found.values()))
    assert [f.name for f in long] == ["long"]
    assert [f.name for f in wide] == ["wide"]
    assert "functions of 50+ lines: 1" in text
    assert "9 params demo.py:7 wide" in text


def test_limits_fail_when_exceeded(tmp_path, capsys) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text(SOURCE)
    assert sizes.main([str(package), "--max-long", "1", "--max-wide", "1"]) == 0
    assert sizes.main([str(package), "--max-long", "0"]) == 1
    assert sizes.main([str(package), "--max-wide", "0"]) == 1
    assert "pkg/mod.py:" in capsys.readouterr().out
