"""The project's prose (README.md, docs/*.md, ARCHITECTURE.md, BENCHMARKS.md, CONTRIBUTING.md, the comments
of conf/, results/*.md) says only what is true of the project: every ``conf/`` or other project file, config
key, ``xurs`` subcommand and flag, test file and DVC stage it names exists; its counts agree with the code;
every measured figure is given by the source it cites (a BENCHMARKS.md section's ledger rows, a committed
results file that names its command, a linked page or a conf value: tests/docs_figures.py), no figure cites
nothing and no time is worded; it carries no commit hash, project issue number, dependency version or note
about one particular run; the one experiment table lists every experiment, each with its measured cost.
Each check has a planted defect it must catch, and each kind of file fails on a planted untraceable figure,
stale count, wrong path and run note (tests/docs_checks.py, :data:`docs_checks.DOCS`)."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml
from docs_checks import (
    DOCS,
    EXPERIMENT_TABLE,
    PAGES,
    ROOT,
    Sources,
    check_benchmark_sections,
    check_cli,
    check_counts,
    check_experiment_table,
    check_figures,
    check_files,
    check_hashes,
    check_issues,
    check_keys,
    check_ledger,
    check_length,
    check_results_file,
    check_run_notes,
    check_stages,
    check_status,
    check_tests,
    check_versions,
    checkers,
    cli_options,
    config_keys,
    figures,
    prose_words,
    table_experiments,
    unignored,
    yaml_comments,
)
from docs_figures import (
    WORDED_TIME,
    Citations,
    benchmark_rows,
    check_cited_figures,
    check_cost_column,
    check_table_figures,
    citations,
    measured,
)

from xurs_pipeline.cli import build_parser
from xurs_pipeline.contracts import _MASK_KEYS, STAGES
from xurs_pipeline.data.config import SOURCES

EXPERIMENTS = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
KEYS = config_keys(yaml.safe_load((ROOT / "params.yaml").read_text()))
OPTIONS = cli_options(build_parser())
FACTS = {
    "stages": STAGES,
    "mask_eval keys": _MASK_KEYS,
    "experiments": EXPERIMENTS,
    "prompt sources": SOURCES,
}
CHECKS = checkers(KEYS, OPTIONS, STAGES, FACTS)
FILES = [(kind, path) for kind in DOCS for path in kind.paths]


def _text(page) -> str:
    return page.read_text(encoding="utf-8")


def _problems(kind, path, text: str) -> list[str]:
    prose = kind.read(text)
    return [problem for name in kind.checks for problem in CHECKS[name](prose, path)]


@pytest.mark.parametrize(("kind", "path"), FILES, ids=[str(p.relative_to(ROOT)) for _, p in FILES])
def test_every_prose_file_is_true_of_the_project(kind, path):
    """Names, counts and figures that exist, and no hashes, issue numbers, versions or run notes."""
    assert _problems(kind, path, _text(path)) == []


def test_every_kind_of_prose_file_is_checked():
    kinds = {kind.name for kind in DOCS}
    assert kinds == {"pages", "architecture", "benchmarks", "contributing", "conf", "results"}
    assert all(kind.paths for kind in DOCS), "a kind with no files checks nothing"


# A defect planted in a real file of each kind must fail that kind's checks: (defect, text for Markdown,
# text for a YAML comment, the problem expected).
PLANTED = (
    ("untraceable figure", "The run took 71.3 minutes and 9.87 GiB.", "# took 71.3 minutes", "71.3 minutes"),
    ("stale count", "The 16 stages of `dvc.yaml` run in order.", "# the 16 stages of dvc.yaml", "stages are"),
    ("wrong path", "See `conf/data/nonesuch.yaml`.", "# see conf/data/nonesuch.yaml", "no such file"),
    ("run note", "It ran at load average 3-5.", "# ran at load average 3-5", "a note about a particular run"),
    ("broken table", "| a | b |\n|---|---|\n| c |", "# | a | b |\n# |---|---|\n# | c |", "a table row of 1"),
)


@pytest.mark.parametrize(("defect", "markdown", "comment", "expected"), PLANTED, ids=[d[0] for d in PLANTED])
@pytest.mark.parametrize("kind", DOCS, ids=[k.name for k in DOCS])
def test_a_planted_defect_fails_every_kind_of_file(kind, defect, markdown, comment, expected):
    path = kind.paths[0]
    text = _text(path)
    planted = f"{text}\n{comment}\n" if path.suffix == ".yaml" else f"{text}\n\n{markdown}\n"
    if kind.name == "benchmarks" and defect == "untraceable figure":
        planted = text.replace("\n## 1.", f"\n{markdown}\n\n## 1.", 1)  # prose of the ledger
    assert _problems(kind, path, text) == []
    assert any(expected in problem for problem in _problems(kind, path, planted)), defect


def test_one_experiment_table_lists_every_experiment_and_the_others_link_to_it():
    assert check_experiment_table(_text(EXPERIMENT_TABLE), EXPERIMENTS) == []
    others = [p.name for p in PAGES if p != EXPERIMENT_TABLE and _lists_most(table_experiments(_text(p)))]
    assert others == [], "one experiment table only (docs/configuration.md): link to it instead"


def _lists_most(named: list[str]) -> bool:
    """A table naming half the experiments or more duplicates the one table (a study's own table of its
    arms does not)."""
    return len(set(named) & set(EXPERIMENTS)) >= len(EXPERIMENTS) / 2


def test_the_readme_opens_with_status_and_limits_that_agree_with_their_pages():
    assert check_status(_text(ROOT / "README.md")) == []


def test_the_readme_is_short_enough_to_read():
    """README_WORDS words outside code at most (counted by ``prose_words``: ``wc -w`` without code blocks)."""
    readme = _text(ROOT / "README.md")
    assert check_length(readme) == []
    assert prose_words("one two\n```bash\nthree four five\n```\n`six` [seven](x.md)\n") == 4
    assert check_length("word " * 2301) == ["README: 2301 words outside code, more than 2300"]
    assert check_length(readme + "\n" + "padding " * (2301 - prose_words(readme))) != []


# Planted defects: each checker must fail on its kind.


def test_a_count_that_disagrees_with_the_code_is_caught():
    assert (
        check_counts("Seventeen DVC stages; the 17 stages of `dvc.yaml`", {**FACTS, "stages": range(17)})
        == []
    )
    assert check_counts("Seventeen DVC stages", {**FACTS, "stages": range(18)}) == [
        "'Seventeen DVC stages': stages are 18"
    ]
    assert check_counts("the ten evaluation keys", FACTS) == [
        f"'the ten evaluation keys': mask_eval keys are {len(_MASK_KEYS)}"
    ]
    assert check_counts("`source` (medqa/synthetic_v1)", FACTS) == [
        f"'`source` (medqa/synthetic_v1)': prompt sources are {'/'.join(SOURCES)}"
    ]
    assert check_counts(f"`source` ({'/'.join(reversed(SOURCES))})", FACTS) == []


def test_a_benchmarks_section_that_does_not_exist_is_caught():
    sections = {"8", "19"}
    cited = "BENCHMARKS.md section 8; [BENCHMARKS.md](../BENCHMARKS.md), section 19"
    assert check_benchmark_sections(cited, sections) == []
    assert check_benchmark_sections("(BENCHMARKS.md sections 8 and 7)", sections) == [
        "BENCHMARKS.md section 7: no such section"
    ]


def test_a_dependency_version_is_caught():
    assert check_versions("pip install torch==2.13.0; transformers' own loader") == []
    assert check_versions("checked with transformers 5.23") == ["'transformers 5.23': a dependency version"]


def test_a_figure_no_kept_file_gives_is_caught():
    assert figures("629 s, 1.90 GiB; 140 of 149; 3.2x; 57%; 1,650 tests; 4 of 20 blocks; R 0.82-0.86") == [
        "629 s",
        "1.90 GiB",
        "140 of 149",
        "3.2x",
        "57%",
        "1,650 tests",
        "0.82-0.86",
    ]
    assert figures("```bash\ndvc repro\n```\n| 12 s |; 0.8 + 0.2 x 0.5 = 90%") == []  # tables are sources
    assert figures("```bash\ndvc repro   # 7-11 minutes\n```") == [
        "7-11 minutes"
    ]  # a command's comment is prose
    sources = Sources(
        (frozenset({"629", "1.90"}), frozenset({"140", "149", "0.2292"})), (frozenset({"0.2292", "0.2583"}),)
    )
    assert (
        check_figures("629 s and 140 of 149, 1.9 GiB, 0.23-0.26", sources) == []
    )  # rounded; a file's min, max
    assert check_figures("7-11 minutes", sources) == [
        "'7-11 minutes': no kept file gives it (BENCHMARKS.md ledger, results/)"
    ]
    assert check_figures("140 of 150", sources) != []  # both numbers must be in one row
    assert check_figures("629-140 s", sources) != []  # a range's ends in one row or one results file
    assert check_figures("0.23 s", Sources((frozenset({"0.2"}),))) != []  # rounding goes one way
    assert (
        CHECKS["figures"]("1.90 GiB, 0.0021 and 0.0081 (BENCHMARKS.md section 5)", ROOT / "README.md") == []
    )


README_TEXT = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND_1 = "501 s (8 min 21 s)"  # README's command-1 time, from BENCHMARKS.md section 5


def _readme_figures(text: str) -> list[str]:
    return check_cited_figures(text, ROOT)


def test_a_figure_is_compared_with_the_source_it_cites():
    """A figure that some BENCHMARKS.md row elsewhere gives, in a paragraph citing another section, fails
    (the check that accepted any row anywhere passed it); so do a figure citing nothing and a worded time."""
    assert COMMAND_1 in README_TEXT
    assert _readme_figures(README_TEXT) == []
    wrong = README_TEXT.replace(COMMAND_1, "1,160 s (19 min 20 s)")  # section 13's controlled_swap
    assert check_figures("1,160 s (19 min 20 s)", Sources((frozenset({"1160", "19", "20"}),))) == []
    cited = "not in the source it cites (BENCHMARKS.md section 5, "
    assert any(p.startswith(f"'1,160 s': {cited}") for p in _readme_figures(wrong)), _readme_figures(wrong)
    unsourced = README_TEXT + "\n\n## Cost\n\nA run took 9.87 GiB.\n"
    assert _readme_figures(unsourced) == [
        "'9.87 GiB': cites no source (a BENCHMARKS.md section, a results/ or conf/ file, or a page)"
    ]


@pytest.mark.parametrize(
    ("time", "caught"),
    [
        ("about ten minutes", "ten minutes"),
        ("a few minutes", "a few minutes"),
        ("about half an hour", "half an hour"),
    ],
)
def test_a_worded_time_fails_where_a_measured_figure_stood(time, caught):
    """A time in words cannot be compared with its source: the check refuses it in place of the figure."""
    worded = README_TEXT.replace("in 501 s ([BENCHMARKS.md]", f"in {time} ([BENCHMARKS.md]")
    assert worded != README_TEXT
    assert _readme_figures(worded) == [f"{caught!r}: a worded time; state the measured figure and cite it"]


SWAP_PAGE = ROOT / "docs" / "swap-control.md"
SWAP_ANCHOR = "There agreement and training-rule swap accuracy part, and the agreement follows the model."


def test_a_list_of_unitless_figures_is_one_figure_from_one_source():
    """Per-seed accuracies with no unit ("model A 1.00, 0.98, 0.93, 0.90 and 1.00") are read as one figure:
    all of its numbers from one row of a cited source or one column of a cited results file, so a list that
    no kept file gives fails even where each number alone occurs somewhere in the cited table."""
    listed = measured("model A 1.00, 0.98, 0.93, 0.90 and 1.00. R 0.0085.")
    assert listed == ["1.00, 0.98, 0.93, 0.90 and 1.00", "0.0085"]
    text = _text(SWAP_PAGE)
    assert SWAP_ANCHOR in text
    assert check_cited_figures(text, SWAP_PAGE.parent) == []
    seeds = " Both learned their cues: model A 1.00, 0.98, 0.93, 0.90 and 1.00 on seeds 5 to 9."
    planted = text.replace(SWAP_ANCHOR, SWAP_ANCHOR + seeds)
    assert check_cited_figures(planted, SWAP_PAGE.parent) == [
        "'1.00, 0.98, 0.93, 0.90 and 1.00': not in the source it cites (results/sweeps/swap_sweep.md)"
    ]
    kept = " Model A agreed on 77 of 80 probes and model B on 69 of 80 (0.96 and 0.86)."
    assert check_cited_figures(text.replace(SWAP_ANCHOR, SWAP_ANCHOR + kept), SWAP_PAGE.parent) == []


def test_a_conf_comment_figure_is_compared_with_its_cited_section():
    path = ROOT / "conf" / "attribution" / "default.yaml"
    text = _text(path)
    assert "2.0-2.5x" in text
    assert CHECKS["figures"](yaml_comments(text), path) == []
    stale = yaml_comments(text.replace("2.0-2.5x", "2.0-2.7x"))
    expected = "'2.0-2.7x': not in the source it cites (BENCHMARKS.md section 9)"
    assert CHECKS["figures"](stale, path) == [expected]


def test_citations_sources_and_definitions_are_read():
    cited = citations("see [BENCHMARKS.md](../BENCHMARKS.md), sections 5 and 13; `results/a.md`, [p](x.md)")
    assert cited == Citations(frozenset({"5", "13"}), frozenset({"results/a.md"}), frozenset({"x.md"}))
    assert citations("(BENCHMARKS.md, other measurements)").pages == {"BENCHMARKS.md"}
    assert not citations("no source here")
    shown = "a Wilson 95% interval, chance (25%), block 20 of 30; 95% of a run, R 0.0085"
    assert measured(shown) == ["95%", "0.0085"]
    section_5 = benchmark_rows("5")
    assert any({"501", "1.90"} <= row for row in section_5)
    assert not any({"1160"} <= row for row in section_5)
    worded = WORDED_TIME.finditer("half an hour, a few minutes, a second model, 3 s")
    assert [m.group(0) for m in worded] == ["half an hour", "a few minutes"]


LEDGER = """## Machines

| name | CPU |
|---|---|
| Xeon | 2 cores |

## 1. Something

| what | command | machine | figure | date |
|---|---|---|---|---|
| a thing | `python bench/x.py` | Xeon, idle | 12 s | 2026-11-20 |
"""


def test_a_ledger_row_without_command_machine_or_date_is_caught():
    assert check_ledger(LEDGER) == []
    assert check_ledger(LEDGER.replace("`python bench/x.py`", "python")) == [
        "## 1. Something: 'a thing' names no command"
    ]
    assert check_ledger(LEDGER.replace("Xeon, idle", "Pentium")) == [
        "## 1. Something: 'a thing': machine 'Pentium' is not in ## Machines"
    ]
    assert check_ledger(LEDGER.replace("2026-11-20", "last week")) == [
        "## 1. Something: 'a thing' has no date"
    ]
    assert check_ledger(LEDGER.replace("| what | command", "| what | how")) == [
        "## 1. Something: no ledger table (| what | command | machine | figure | date |)"
    ]


def test_a_runs_own_outputs_under_results_are_not_checked_as_prose(tmp_path):
    # README command 1 then command 2 in one clone: `dvc repro` writes results/tables/*.md, which DVC's
    # results/.gitignore ignores; the kept files, and a new one not yet committed, are still checked.
    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (results / ".gitignore").write_text("/tables\n")
    for name in ("README.md", "kept.md", "new.md", "tables/accuracy.md"):
        (results / name).write_text("# T\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "results/README.md", "results/kept.md"], check=True)
    found = unignored(tmp_path, "results", ".md")
    assert found == tuple(results / n for n in ("README.md", "kept.md", "new.md"))
    (results / ".gitignore").unlink()  # without the ignore rule the run's table is checked
    assert results / "tables" / "accuracy.md" in unignored(tmp_path, "results", ".md")


def test_a_results_file_without_its_command_or_with_a_stray_figure_is_caught(tmp_path):
    index = "| file | command | machine | date |\n|---|---|---|---|\n"
    index += "| `results/a.md` | `xurs swap-sweep` | Xeon | 2026-11-26 |\n"
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "README.md").write_text(index)
    kept = "# T\n\n| m | k |\n|---|---|\n| a | 140/149 |\n"
    (tmp_path / "results" / "a.md").write_text(kept)
    index_path, path = tmp_path / "results" / "README.md", tmp_path / "results" / "a.md"
    assert check_results_file(kept, path, root=tmp_path) == []
    assert check_results_file(index, index_path, root=tmp_path) == []
    assert check_results_file(kept + "\nIt took 36 minutes.\n", path, root=tmp_path) == [
        "'36 minutes': no kept file gives it (BENCHMARKS.md ledger, results/)"
    ]
    (tmp_path / "results" / "README.md").write_text(index.replace("`xurs swap-sweep`", "a script"))
    assert check_results_file(kept, path, root=tmp_path) == [
        "results/a.md: not in results/README.md with the command that wrote it"
    ]
    path.unlink()
    assert check_results_file(index, index_path, root=tmp_path) == [
        "results/a.md: listed in results/README.md but not in the project"
    ]


def test_a_status_figure_its_page_does_not_give_is_caught():
    readme = _text(ROOT / "README.md")
    assert check_status(readme.replace("first on 8 of 8", "first on 9 of 9", 1)) == [
        "status: '9 of 9' is not on docs/positive-control.md"
    ]
    assert check_status("# XU-RS\n\nno status\n") == ["README: no '## Status and limits' section"]
    late = readme.replace("## Status and limits", "\n" * 20 + "## Status and limits")
    assert "README: '## Status and limits' is not within the first 15 lines" in check_status(late)


def test_a_file_that_does_not_exist_is_caught():
    assert check_files("see `conf/data/synthetic_swap.yaml`") == []
    assert check_files("see `data/synthetic_swap.yaml`") == [
        "data/synthetic_swap.yaml: no such file in the project"
    ]
    assert check_files("see `conf/experiment/nope.yaml`") == [
        "conf/experiment/nope.yaml: no such file in the project"
    ]
    assert check_files("[page](docs/nope.md)") == ["docs/nope.md: no such file in the project"]
    assert check_files("Eq. 8 in `evaluation/mask_eval.py`") == []  # a module of xurs_pipeline/


def test_a_config_key_that_does_not_exist_is_caught():
    assert check_keys("`data.medqa_path=x` and `evaluation.numerics.max_residual_max`", KEYS) == []
    assert check_keys("`model.backbone=gguf model.source=model.gguf`", KEYS) == []  # a file name
    assert check_keys("`data.medqa_pth=x`", KEYS) == ["data.medqa_pth: not a config key"]
    assert check_keys("```bash\ndvc exp run -S train.seeds=1\n```", KEYS) == ["train.seeds: not a config key"]


def test_an_xurs_subcommand_or_flag_that_does_not_exist_is_caught():
    assert check_cli("`xurs explain --record-id q1 --method kronrod`", OPTIONS) == []
    assert check_cli("`xurs explian --record-id q1`", OPTIONS) == ["xurs explian: no such subcommand"]
    assert check_cli("```bash\nxurs plan \\\n  --gpu h100\n```", OPTIONS) == [
        "xurs plan --gpu: no such option"
    ]


def test_a_test_file_that_does_not_exist_is_caught():
    assert check_tests("`tests/foundation/test_foundation_docs.py`") == []
    bad = "`tests/train/test_train_launch.py`"
    assert check_tests(bad) == ["tests/train/test_train_launch.py: no such test file"]


def test_a_stage_that_does_not_exist_is_caught():
    assert check_stages("`python -m stages train` and `dvc exp run gates -S a=1`", STAGES) == []
    assert check_stages("`python -m stages trian`", STAGES) == ["trian: no such DVC stage"]
    assert check_stages("`dvc repro --force gate`", STAGES) == ["gate: no such DVC stage"]


def test_a_commit_hash_is_caught():
    assert check_hashes("config 2024, seeds 17 and 23, `coords`") == []
    assert check_hashes("| ├── 6d42bdd [trial-huts] |") == ["6d42bdd: looks like a commit hash"]


def test_a_project_issue_number_is_caught():
    assert check_issues("huggingface/accelerate issue 2741 (upstream)") == []
    assert check_issues("the head-first model (issue 17)") == ["issue 17: a project issue number"]
    assert check_issues("fixed in #12") == ["#12: a project issue number"]


def test_a_note_about_one_run_is_caught():
    assert check_run_notes("7-11 minutes on a 2-core CPU (BENCHMARKS.md)") == []
    assert check_run_notes("took 19 min, load average 4-7") == [
        "'load average': a note about a particular run"
    ]
    assert check_run_notes("seed 1's project was not kept") == [
        "'was not kept': a note about a particular run"
    ]


def test_an_experiment_missing_from_the_table_is_caught():
    table = "| experiment | what |\n|---|---|\n| `smoke` | tiny |\n| `local` (default) | positive control |\n"
    assert check_experiment_table(table, ["smoke", "local"]) == []
    assert check_experiment_table(table, ["smoke", "local", "controlled_swap"]) == [
        "controlled_swap: missing from the experiment table"
    ]
    assert _lists_most(EXPERIMENTS)  # a second full table is a duplicate
    assert not _lists_most(["local", "controlled_direct"])  # a study's own table of its arms is not


def test_the_experiment_table_states_each_cost_from_its_benchmarks_row():
    """Every experiment has a cost cell: a figure of the section it names, or "not measured"."""
    table = _text(EXPERIMENT_TABLE)
    assert check_cost_column(table) == []
    assert check_cost_column(table.replace("64.9 s (section 5)", "64.9 s (section 13)")) == [
        "`smoke`: cost '64.9 s' is not in BENCHMARKS.md section 13"
    ]
    assert check_cost_column(table.replace("64.9 s (section 5)", "about a minute")) == [
        "`smoke`: cost 'about a minute' is neither a measured figure nor 'not measured'"
    ]
    assert check_cost_column(table.replace("64.9 s (section 5)", "64.9 s")) == [
        "`smoke`: cost '64.9 s' cites no BENCHMARKS.md section"
    ]
    assert check_cost_column(table.replace("| cost (BENCHMARKS.md) ", "| time ")) == [
        "the experiment table has no 'cost (BENCHMARKS.md)' column"
    ]


def command_1_claim(readme: str) -> str:
    """README's time for command 1 (``**Command 1** runs ...: 501 s``)."""
    return re.search(r"\*\*Command 1\*\* runs [^:]*: (\d[\d,]* s)", readme).group(1)


def command_1_row() -> str:
    """BENCHMARKS.md's row for README command 1 as printed."""
    (row,) = [
        line for line in _text(ROOT / "BENCHMARKS.md").splitlines() if line.startswith("| README command 1 ")
    ]
    return row


def test_readme_command_1_time_is_the_row_for_the_command_as_printed():
    """Not any row of section 5 (another experiment's or an older tree's run has its own): the row that ran
    README's command 1 as printed."""
    assert command_1_claim(README_TEXT) in command_1_row()
    older = README_TEXT.replace(f": {command_1_claim(README_TEXT)}", ": 629 s")
    assert command_1_claim(older) == "629 s"
    assert command_1_claim(older) not in command_1_row()
    assert _readme_figures(older) == []  # section 5 gives 629 s too: only this test tells the rows apart


def test_a_range_spans_one_column_of_a_results_file(tmp_path):
    (tmp_path / "results").mkdir()
    table = "| m | accuracy | error |\n|---|---|---|\n| x | 0.23 | 1.40 |\n| y | 0.26 | 1.58 |\n"
    (tmp_path / "results" / "t.md").write_text(table)
    assert check_cited_figures("Accuracy 0.23-0.26 (`results/t.md`).", tmp_path, tmp_path) == []
    assert check_cited_figures("Accuracy 0.23-1.58 (`results/t.md`).", tmp_path, tmp_path) == [
        "'0.23-1.58': not in the source it cites (results/t.md)"
    ]


TABLE = """## Cost

The smoke run, [BENCHMARKS.md](../BENCHMARKS.md) section 5:

| experiment | time |
|---|---|
| `smoke` | 64.9 s |
"""


def test_a_page_table_is_checked_against_what_it_cites_not_against_itself():
    """A page's own table is no source for its figures: a wrong or unsourced cell fails, as in prose."""
    docs = ROOT / "docs"
    assert check_cited_figures(TABLE, docs) == []
    assert check_cited_figures(TABLE.replace("64.9 s", "61.9 s"), docs) == [
        "'61.9 s': not in the source it cites (BENCHMARKS.md section 5)"
    ]
    unsourced = TABLE.replace(", [BENCHMARKS.md](../BENCHMARKS.md) section 5", "")
    assert check_cited_figures(unsourced, docs) == [
        "'64.9 s': cites no source (a BENCHMARKS.md section, a results/ or conf/ file, or a page)"
    ]
    in_row = unsourced.replace("| 64.9 s |", "| 64.9 s (BENCHMARKS.md section 5) |")
    assert check_cited_figures(in_row, docs) == []  # a row may cite its own source
    assert check_cited_figures(TABLE.replace("64.9 s", "about a minute"), docs) == [
        "'about a minute': a worded time; state the measured figure and cite it"
    ]
    header = TABLE.replace(", [BENCHMARKS.md](../BENCHMARKS.md) section 5", "").replace(
        "| time |", "| time (BENCHMARKS.md) |"
    )
    assert check_table_figures(header.replace("| 64.9 s |", "| 64.9 s (section 5) |"), citations("")) == []


def test_counts_of_evaluations_draws_and_forwards_are_figures():
    """A count of gradient evaluations, draws or forwards is a measurement to source (a bound, "<= 4,096", is
    not); a planted one in a conf comment fails against the sections it cites."""
    text = "~290 evaluations; 1,200 gradient evaluations, 80.5 forwards; a median <= 4,096 evaluations"
    assert figures(text) == ["290 evaluations", "1,200 gradient evaluations", "80.5 forwards"]
    assert figures("about 90\nevaluations a reference, 8 of\n8 questions") == ["90\nevaluations", "8 of\n8"]
    path = ROOT / "conf" / "attribution" / "local.yaml"
    comments = yaml_comments(_text(path))
    assert CHECKS["figures"](comments, path) == []
    planted = comments.replace("and the checks report it", "and adaptive IG takes ~290 evaluations")
    assert planted != comments
    (problem,) = CHECKS["figures"](planted, path)
    assert problem.startswith("'290 evaluations': not in the source it cites (BENCHMARKS.md section 2, ")
