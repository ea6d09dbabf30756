"""``reporting/swap_sweep.py``: the method x experiment table pools each experiment's counts, per model too,
with Wilson intervals: descriptions (the verdict is the analysis plan's, from the pooled ledger)."""

from __future__ import annotations

import json

import pytest

from xurs_pipeline.reporting.swap_sweep import rendered, sweep_table


def _measures(clear: tuple[int, int], a: tuple[int, int], b: tuple[int, int]) -> dict[str, int]:
    both = (a[0] + b[0], a[1] + b[1])
    out: dict[str, int] = {}
    for prefix, (k, n) in {
        "swap": both,
        "agreement": both,
        "agreement_clear": clear,
        "agreement_A": a,
        "agreement_B": b,
    }.items():
        out |= {f"{prefix}_k": k, f"{prefix}_n": n}
    return out


def _study(good: tuple[int, int], bad: tuple[int, int]) -> dict:
    return {
        "methods": {
            "good": _measures(good, (16, 16), (good[0] - 16 + 1, 16)),
            "bad": _measures(bad, (16, 16), (4, 16)),
        },
        "behaves_as_trained": {"A": {"k": 16, "n": 16}, "B": {"k": 15, "n": 16}},
    }


def test_counts_are_pooled_per_method_and_per_model() -> None:
    studies = {"s5": _study((27, 28), (18, 28)), "s6": _study((28, 28), (19, 28))}
    table = rendered(sweep_table(studies)).set_index("row")
    assert table.loc["good", "s5"] == "27/28"
    assert table.loc["good", "agreement_clear_text"].endswith("(55/56)")
    assert "passes" not in table.columns  # no verdict beside the plan's
    assert table.loc["bad", "agreement_A_text"].endswith("(32/32)")
    assert table.loc["bad", "agreement_B_text"].startswith("0.25 ")  # where it fails: model B's probes
    assert table.loc["model B behaves as trained", "agreement_text"].endswith("(30/32)")
    assert table.loc["model B behaves as trained", "agreement_A_text"] == "—"


def test_high_agreement_on_few_probes_has_a_wide_interval() -> None:
    """0.93 on 27 clear probes (seed 5's best method): its Wilson lower bound, 0.77, is under 0.8."""
    table = sweep_table({"s5": _study((25, 27), (11, 27))}).set_index("row")
    assert table.loc["good", "agreement_clear"] == pytest.approx(25 / 27)
    assert table.loc["good", "agreement_clear_low"] == pytest.approx(0.7663, abs=1e-4)  # scipy's Wilson low


def test_no_study_is_refused() -> None:
    with pytest.raises(ValueError, match="no swap study"):
        sweep_table({})


def write_project(root, seed: int, study: dict) -> str:
    """A project directory run elsewhere: its params.yaml (data.seed, where artifacts go) and swap study."""
    (root / "out/swap/study").mkdir(parents=True)
    (root / "params.yaml").write_text(f"paths:\n  artifacts: out\n  results: res\ndata:\n  seed: {seed}\n")
    (root / "out/swap/study/summary.json").write_text(json.dumps(study))
    return str(root)


def test_projects_are_labelled_by_a_param_and_kept_apart(tmp_path) -> None:
    """``xurs swap-sweep --project A --project B --label data.seed``: columns named by the seed; two projects
    with the same seed stay two columns; the study is found where each project's params.yaml says."""
    from xurs_pipeline.commands.swap_sweep import project_source
    from xurs_pipeline.experiments.pooling import pooled

    studies = {
        "a": (6, _study((27, 28), (1, 28))),
        "b": (6, _study((26, 28), (1, 28))),
        "c": (7, _study((25, 28), (1, 28))),
    }
    sources = [project_source(write_project(tmp_path / n, seed, s)) for n, (seed, s) in studies.items()]
    assert list(pooled(sources, ["data.seed"])) == ["data.seed=6", "data.seed=6 (b)", "data.seed=7"]
    assert list(pooled(sources[:2])) == ["a", "b"]  # one seed: replicates
    with pytest.raises(ValueError, match=r"data\.seed=6, .* data\.seed=7: studies made with other settings"):
        pooled(sources)  # another seed is another setting: named by --label
    (tmp_path / "c/out/swap/study/summary.json").unlink()
    with pytest.raises(ValueError, match=r"--project .*c: .*summary\.json not found"):
        project_source(str(tmp_path / "c"))


def test_columns_sort_by_number() -> None:
    from xurs_pipeline.commands.swap_sweep import natural_key

    names = ["data.seed=10", "data.seed=9", "seed5", "data.seed=6"]
    assert sorted(names, key=natural_key) == ["data.seed=6", "data.seed=9", "data.seed=10", "seed5"]
