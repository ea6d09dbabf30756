"""The user-facing pages (README.md, docs/*.md) say only what is true of the project: every ``conf/`` or
other project file, config key, ``xurs`` subcommand and flag, test file and DVC stage they name exists; they
carry no commit hash, project issue number or note about one particular run; the one experiment table
lists every experiment. Each kind of check has a planted defect it must catch (tests/docs_checks.py)."""

from __future__ import annotations

import pytest
import yaml
from docs_checks import (
    EXPERIMENT_TABLE,
    PAGES,
    ROOT,
    check_cli,
    check_experiment_table,
    check_files,
    check_hashes,
    check_issues,
    check_keys,
    check_run_notes,
    check_stages,
    check_status,
    check_tests,
    cli_options,
    config_keys,
    table_experiments,
)

from xurs_pipeline.cli import build_parser
from xurs_pipeline.contracts import STAGES

EXPERIMENTS = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
KEYS = config_keys(yaml.safe_load((ROOT / "params.yaml").read_text()))
OPTIONS = cli_options(build_parser())


def _text(page) -> str:
    return page.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_name_a_page_gives_exists(page):
    text = _text(page)
    problems = check_files(text) + check_keys(text, KEYS) + check_cli(text, OPTIONS)
    problems += check_tests(text) + check_stages(text, STAGES)
    assert problems == [], f"{page.name}: {problems}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_carries_hashes_issue_numbers_or_run_notes(page):
    text = _text(page)
    problems = check_hashes(text) + check_issues(text) + check_run_notes(text)
    assert problems == [], f"{page.name}: {problems}"


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


# Planted defects: each checker must fail on its kind.


def test_a_status_figure_its_page_does_not_give_is_caught():
    readme = _text(ROOT / "README.md")
    assert check_status(readme.replace("8 of 8 questions", "9 of 9 questions")) == [
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
