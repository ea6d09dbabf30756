"""``xurs swap-sweep`` keeps what it pooled (``<stem>.inputs/``, one JSON per study) beside its table, and
``--kept`` rebuilds the table from those files alone, byte for byte: the kept example
(``results/sweeps/swap_example/``, two seeds of the tiny swap study) and the held-out seeds of the swap
study's first design (``results/sweeps/swap_heldout_design1/``) and of the shipped one
(``results/sweeps/swap_heldout/``) regenerate exactly, and a changed count in
a kept study changes the table (the comparison can fail)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from xurs_pipeline.cli import main as xurs
from xurs_pipeline.config import compose
from xurs_pipeline.evaluation.swap.plan import FIRST_HELD_OUT_SEED, plan_digest
from xurs_pipeline.experiments.pooling import differing_keys
from xurs_pipeline.experiments.show import flatten

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "results" / "sweeps" / "swap_example"
SWEEPS = ROOT / "results" / "sweeps"
HELD_OUT_DESIGN_1 = SWEEPS / "swap_heldout_design1"
HELD_OUT = SWEEPS / "swap_heldout"  # the shipped design's held-out seeds
# The first design's recipe as overrides of the shipped `controlled_swap` (docs/swap-control.md): 240
# training families for up to 8 epochs. Its held-out seeds 101 and 102 ran under it.
DESIGN_1 = ("data.families=[240,24,32]", "train.max_epochs=8")
# The shipped design was chosen on held-out seed 102 (docs/swap-plan.md, `first_held_out_seed`): its held-out
# seeds start at 103.
SHIPPED_FIRST_HELD_OUT_SEED = 103
# Every kept held-out table: the overrides of `controlled_swap` its seeds ran under, its first held-out seed.
HELD_OUT_TABLES = {
    HELD_OUT_DESIGN_1: (DESIGN_1, FIRST_HELD_OUT_SEED),
    HELD_OUT: ((), SHIPPED_FIRST_HELD_OUT_SEED),
}
KEPT = pytest.mark.parametrize(
    "table", [EXAMPLE, HELD_OUT_DESIGN_1, HELD_OUT], ids=["example", "held_out_design1", "held_out"]
)
TABLE = ("swap_sweep.md", "swap_sweep.tex", "swap_sweep.csv", "swap_sweep.json")


def rebuilt(kept: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert xurs(["swap-sweep", "--kept", str(kept), "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def kept_studies(table: Path) -> list[dict]:
    """The studies a kept table pooled (``swap_sweep.inputs/*.json``), in their column order."""
    return [json.loads(p.read_text()) for p in sorted((table / "swap_sweep.inputs").glob("*.json"))]


def design_settings(overrides: tuple[str, ...] = ()) -> dict:
    """A swap design's settings, dotted keys: ``experiment=controlled_swap`` composed from conf/ with
    ``overrides`` (none: the shipped design)."""
    return flatten(compose(["experiment=controlled_swap", *overrides], ROOT / "conf"))


def design_faults(params: dict, design: dict) -> list[str]:
    """Each key where a study's ``params`` differ from ``design`` as pooling would refuse them
    (``pooling.differing_keys``), the data seed aside."""
    return [
        f"data.seed={params['data.seed']} ran {k}={params.get(k)!r}, the design {design.get(k)!r}"
        for k in differing_keys([params, design], ["data.seed"])
    ]


def held_out_faults(studies: list[dict], design: dict, first_seed: int) -> list[str]:
    """Why ``studies`` cannot be the held-out seeds of ``design`` (its settings, dotted keys): none, a seed
    below its ``first_seed``, a seed twice, a study judged under another plan digest, or one run with
    other settings than the design's (empty when they can)."""
    seeds = [int(study["params"]["data.seed"]) for study in studies]
    faults = [] if seeds else ["no study"]
    faults += [f"data.seed={seed} is a design seed" for seed in seeds if seed < first_seed]
    faults += [f"data.seed={seed} twice" for seed in sorted(set(seeds)) if seeds.count(seed) > 1]
    digests = {study["summary"]["faithfulness"]["plan_digest"] for study in studies} - {plan_digest()}
    faults += [f"judged under {digest}" for digest in sorted(digests)]
    return faults + [fault for study in studies for fault in design_faults(study["params"], design)]


def files(directory: Path) -> dict[str, bytes]:
    """Every file of a table directory (the kept studies too), by path relative to it."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@KEPT
def test_a_kept_table_is_rebuilt_from_its_kept_studies(table, tmp_path, capsys) -> None:
    out = rebuilt(table / "swap_sweep.inputs", tmp_path / "out", capsys)
    kept, again = files(table), files(out)
    assert set(kept) == set(again)
    assert "swap_sweep.png" in again
    for name, content in kept.items():
        if name.endswith(".png"):  # drawn anew, its pixels the machine's fonts': it must show something
            assert plt.imread(out / name).std() > 0.05, name
            continue
        assert again[name] == content, f"{name} differs from its rebuild: run `xurs swap-sweep --kept "
        f"{table.relative_to(ROOT)}/swap_sweep.inputs --out {table.relative_to(ROOT)} --overwrite`"


def test_a_changed_count_in_a_kept_study_changes_the_table(tmp_path, capsys) -> None:
    kept = shutil.copytree(EXAMPLE / "swap_sweep.inputs", tmp_path / "kept")
    first = sorted(kept.glob("*.json"))[0]
    study = json.loads(first.read_text())
    measures = study["summary"]["methods"]["paper"]
    measures["agreement_clear_k"] = measures["agreement_clear_n"] - measures["agreement_clear_k"]  # k flipped
    first.write_text(json.dumps(study))
    out = rebuilt(kept, tmp_path / "out", capsys)
    for name in TABLE:
        assert (out / name).read_bytes() != (EXAMPLE / name).read_bytes(), name


@KEPT
def test_the_kept_studies_pool_what_the_table_shows(table, capsys) -> None:
    """A kept table's pooled counts are the sums over its kept studies (an independent addition), and its
    verdict column is the pooled study's (as the .json's)."""
    studies = kept_studies(table)
    pooled = json.loads((table / "swap_sweep.json").read_text())
    rows = {r["row"]: r for r in pooled["rows"]}
    for method, row in rows.items():
        if method.startswith("model "):
            continue
        k = sum(s["summary"]["methods"][method]["agreement_clear_k"] for s in studies)
        n = sum(s["summary"]["methods"][method]["agreement_clear_n"] for s in studies)
        assert (row["agreement_clear_k"], row["agreement_clear_n"]) == (k, n), method
        assert row["verdict"] == pooled["faithfulness"]["methods"][method]["verdict"], method
    assert [s["column"] for s in studies] == pooled["faithfulness"]["studies"]


def test_a_kept_directory_without_studies_is_refused(tmp_path, capsys) -> None:
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "01.json").write_text('{"column": "a"}')
    assert xurs(["swap-sweep", "--kept", str(tmp_path / "kept"), "--out", str(tmp_path / "out")]) == 2
    assert "01.json: not a kept swap study (missing where, params, summary, faithfulness_rows)" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "out").exists()


@KEPT
def test_the_docs_quote_the_kept_table(table) -> None:
    """docs/swap-control.md shows each kept table as the file holds it (every row and the footer)."""
    doc = (ROOT / "docs" / "swap-control.md").read_text(encoding="utf-8")
    lines = [
        line
        for line in (table / "swap_sweep.md").read_text().splitlines()
        if line.startswith(("|", "_experiment"))
    ]
    assert len(lines) > 3
    assert "\n".join(lines) in doc


def test_kept_with_other_sources_is_refused(tmp_path, capsys) -> None:
    args = ["swap-sweep", "--kept", str(EXAMPLE / "swap_sweep.inputs"), "--out", str(tmp_path / "out")]
    assert xurs([*args, "--project", str(tmp_path)]) == 2
    assert "--kept rebuilds a table from its kept studies alone" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("table", list(HELD_OUT_TABLES), ids=lambda table: table.name)
def test_a_held_out_table_pools_only_held_out_seeds_of_its_design_under_the_current_plan(table) -> None:
    """Every study of a kept held-out table ran on a data seed from its design's first held-out seed up, each
    seed once, with its design's settings (a changed default means a new table and new seeds), and was judged
    under the plan as it stands (its digest)."""
    overrides, first_seed = HELD_OUT_TABLES[table]
    assert held_out_faults(kept_studies(table), design_settings(overrides), first_seed) == []


def test_every_held_out_table_is_checked_against_its_design() -> None:
    """A kept held-out table (``results/sweeps/swap_heldout*``) the design check does not read fails here."""
    assert sorted(SWEEPS.glob("swap_heldout*")) == sorted(HELD_OUT_TABLES)


def test_the_first_design_is_not_the_shipped_one() -> None:
    """Design 1's overrides change a result-changing setting of today's `controlled_swap` (else its seeds
    would pool with the shipped design's)."""
    assert differing_keys([design_settings(DESIGN_1), design_settings()], ["data.seed"])


def test_a_design_seed_a_repeated_seed_another_plan_or_design_is_a_held_out_fault() -> None:
    study, design = kept_studies(HELD_OUT_DESIGN_1)[0], design_settings(DESIGN_1)

    def planted(seed: int, digest: str, **changed) -> dict:
        faithfulness = {**study["summary"]["faithfulness"], "plan_digest": digest}
        summary = {**study["summary"], "faithfulness": faithfulness}
        return {**study, "params": {**study["params"], "data.seed": seed, **changed}, "summary": summary}

    def faults(*studies: dict) -> list[str]:
        return held_out_faults(list(studies), design, FIRST_HELD_OUT_SEED)

    current = plan_digest()
    assert faults(planted(7, current)) == ["data.seed=7 is a design seed"]
    assert faults(planted(101, current), planted(101, current)) == ["data.seed=101 twice"]
    assert faults(planted(102, "plan-0")) == ["judged under plan-0"]
    assert faults() == ["no study"]
    assert faults(planted(103, current, **{"model.keep_layers": 12})) == [
        "data.seed=103 ran model.keep_layers=12, the design 20"
    ]
    # a study of design 1 checked against the shipped design, from 103: each key its recipe changed is named
    assert held_out_faults([planted(101, current)], design_settings(), SHIPPED_FIRST_HELD_OUT_SEED) == [
        "data.seed=101 is a design seed",
        "data.seed=101 ran data.families=[240, 24, 32], the design [480, 24, 32]",
        "data.seed=101 ran train.max_epochs=8, the design 6",
    ]
    # what changes no result may differ: the randomised sanity runs one seed carries, a progress bar
    quiet = {"evaluation.swap_randomise": "head", "attribution.progress": False}
    assert faults(planted(104, current, **quiet)) == []
