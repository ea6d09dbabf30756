"""bench/ holds benchmarks only: no script imports another script or patches the library
(``tests/bench_scripts.rule_breaks``), each rule with a planted script it must catch."""

from __future__ import annotations

from bench_scripts import BENCH, rule_breaks

SCRIPTS = {p.stem for p in BENCH.glob("*.py")}


def test_no_bench_script_imports_another_or_patches_the_library() -> None:
    assert len(SCRIPTS) > 10
    breaks = {p.name: rule_breaks(p.read_text(), SCRIPTS) for p in sorted(BENCH.glob("*.py"))}
    assert {name: found for name, found in breaks.items() if found} == {}


def test_a_script_importing_another_is_caught() -> None:
    source = "import _common as C\nfrom bench_speed import main\nfrom xurs_pipeline.io import write_json\n"
    assert rule_breaks(source, {"_common", "bench_speed"}) == ["imports the bench script bench_speed"]
    assert rule_breaks("import bench_speed.sub\n", {"bench_speed"}) == [
        "imports the bench script bench_speed"
    ]


def test_a_script_patching_the_library_is_caught() -> None:
    planted = "from unittest import mock\nwith mock.patch.object(KronrodSpec, 'lead', f):\n    pass\n"
    assert rule_breaks(planted, set()) == ["imports unittest.mock (patches the library)"]
    assert rule_breaks("import mock\n", set()) == ["imports mock (patches the library)"]
    assert rule_breaks("from unittest import TestCase\n", set()) == []
