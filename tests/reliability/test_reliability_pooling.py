"""``xurs swap-sweep`` pools only what can be pooled: each study once, all made with the same experiment,
method and estimator settings but the keys ``--label`` compares, counts that are counts; an unknown
``--label`` key is an error; the table carries the hash of what it pooled. Each refusal is one line and
exit 2, never a traceback, and writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from xurs_pipeline.cli import main as xurs


def study(clear: tuple[int, int]) -> dict:
    counts = {f"{p}_{c}": v for p in ("swap", "agreement", "agreement_A", "agreement_B", "agreement_clear")
              for c, v in zip("kn", clear, strict=True)}  # fmt: skip
    return {"methods": {"paper": counts}, "behaves_as_trained": {r: {"k": 15, "n": 16} for r in "AB"}}


def project(
    root: Path, summary: dict, seed: int = 1, method: str = "eg", name: str = "controlled_swap"
) -> str:
    """A project run elsewhere: params.yaml and its swap study where paths.artifacts says."""
    (root / "data/swap/study").mkdir(parents=True)
    attribution = {"method": method, "progress": seed % 2 == 0}
    params = {"experiment_name": name, "paths": {"artifacts": "data", "results": "results"},
              "data": {"seed": seed}, "attribution": attribution}  # fmt: skip
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    (root / "data/swap/study/summary.json").write_text(json.dumps(summary))
    return str(root)


def sweep(tmp: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = xurs(["swap-sweep", "--out", str(tmp / "out"), *args])
    err = capsys.readouterr().err
    if code:
        assert "Traceback" not in err
        assert not (tmp / "out").exists()  # nothing written
        return code, err.strip().splitlines()[-1]
    return code, err


def table(tmp: Path) -> pd.DataFrame:
    return pd.read_csv(tmp / "out" / "swap_sweep.csv").set_index("row")


def test_one_study_given_twice_is_refused(tmp_path, capsys):
    """``--project q --project q`` made a failing study pass (27/28 counted as 54/56)."""
    q = project(tmp_path / "q", study((25, 27)))
    code, line = sweep(tmp_path, capsys, "--project", q, "--project", q)
    assert code == 2
    assert (
        f"--project {q} and --project {q} are the same source: pooling both would count one study twice"
        in line
    )
    shutil.copytree(q, tmp_path / "copy")  # the same study under another name
    code, line = sweep(tmp_path, capsys, "--project", q, "--project", str(tmp_path / "copy"))
    assert code == 2
    assert f"--project {q} and --project {tmp_path / 'copy'} hold the same content" in line


def test_projects_whose_folders_share_a_name_stay_apart(tmp_path, capsys):
    """Three clones named ``xurs``: three columns, every count pooled once (the third overwrote one)."""
    roots = [project(tmp_path / d / "xurs", study((20 + i, 28)), seed=i) for i, d in enumerate("abc")]
    code, _ = sweep(tmp_path, capsys, *(a for r in roots for a in ("--project", r)))
    assert code == 0
    got = table(tmp_path)
    assert got.loc["paper", "agreement_clear_text"].endswith(f"({20 + 21 + 22}/{3 * 28})")
    assert {c for c in got.columns if c.startswith("xurs")} == {
        "xurs", "xurs (xurs)", f"xurs (--project {roots[2]})"
    }  # fmt: skip
    assert "swap sweep (3 experiments)" in (tmp_path / "out" / "swap_sweep.md").read_text()


@pytest.mark.parametrize(("key", "other"), [("attribution.method", {"method": "ig"}),
                                            ("experiment_name", {"name": "controlled_swap_b"})])  # fmt: skip
def test_studies_of_other_settings_pool_only_when_the_key_is_compared(tmp_path, capsys, key, other):
    a = project(tmp_path / "a", study((25, 28)))
    b = project(tmp_path / "b", study((26, 28)), seed=2, **other)
    code, line = sweep(tmp_path, capsys, "--project", a, "--project", b)
    assert code == 2
    assert f"--project {a} has {key}=" in line
    assert f"studies made with other settings are not pooled; compare them with --label {key}" in line
    code, _ = sweep(tmp_path, capsys, "--project", a, "--project", b, "--label", key)
    assert code == 0
    assert table(tmp_path).loc["paper", "agreement_clear_text"].endswith("(51/56)")


def test_settings_that_change_no_result_may_differ(tmp_path, capsys):
    """attribution.progress differs between seed 1 and seed 2 (the progress bar): pooled."""
    a, b = project(tmp_path / "a", study((25, 28))), project(tmp_path / "b", study((26, 28)), seed=2)
    assert sweep(tmp_path, capsys, "--project", a, "--project", b, "--label", "data.seed")[0] == 0
    assert {"data.seed=1", "data.seed=2"} <= set(table(tmp_path).columns)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            lambda s: s["methods"]["paper"].update(agreement_clear_k=30),
            "agreement_clear_k=30, agreement_clear_n=28",
        ),
        (lambda s: s["methods"]["paper"].update(agreement_clear_k="27"), "agreement_clear_k='27'"),
        (lambda s: s["methods"]["paper"].update(swap_k=-1), "swap_k=-1"),
        (lambda s: s["behaves_as_trained"].pop("B"), "behaves_as_trained.B: k=None, n=None"),
        (lambda s: s.pop("behaves_as_trained"), "no method comparison or behaves_as_trained"),
        (lambda s: s["methods"]["paper"].pop("agreement_n"), "methods.paper.agreement: agreement_k=28"),
        (lambda s: s["methods"].update(paper=[1]), "methods.paper.swap: swap_k=None, swap_n=None"),
    ],
    ids=["k-above-n", "text-count", "negative", "missing-role", "missing-key", "missing-n", "not-an-object"],
)
def test_impossible_counts_are_refused(tmp_path, capsys, edit, words):
    """A summary showing 30/28 passed; a count as text or a missing key ended in a traceback."""
    broken = study((28, 28))
    edit(broken)
    q = project(tmp_path / "q", broken)
    code, line = sweep(tmp_path, capsys, "--project", q)
    assert code == 2
    assert line.startswith(f"xurs swap-sweep: error: --project {q}: ")
    assert words in line
    assert "are not counts (integers, 0 <= k <= n)" in line or "no method comparison" in line


def test_a_measure_without_probes_is_pooled_as_none(tmp_path, capsys):
    """A method's measure of a role with no probes has no k and n (``swap_agreement.method_summary``)."""
    partial = study((25, 28))
    for c in "kn":
        partial["methods"]["paper"].pop(f"agreement_B_{c}")
    a, b = project(tmp_path / "a", partial), project(tmp_path / "b", study((26, 28)), seed=2)
    assert sweep(tmp_path, capsys, "--project", a, "--project", b, "--label", "data.seed")[0] == 0
    assert table(tmp_path).loc["paper", "agreement_B_text"].endswith("(26/28)")


def test_an_unknown_label_key_is_an_error(tmp_path, capsys):
    """``--label no.such.key`` fell back to the folder names without a word."""
    a = project(tmp_path / "a", study((25, 28)))
    code, line = sweep(tmp_path, capsys, "--project", a, "--label", "data.sed")
    assert code == 2
    assert f"--label data.sed: --project {a} has no such param; did you mean 'data.seed'?" in line


def test_the_table_carries_the_hash_of_what_it_pooled(tmp_path, capsys):
    """The same studies give the same hash; one count changed gives another (it was the names' hash)."""
    footers = []
    for clear in ((25, 28), (25, 28), (24, 28)):
        root = tmp_path / f"run{len(footers)}"
        a, b = project(root / "a", study(clear)), project(root / "b", study((26, 28)), seed=2)
        out = root / "out"
        assert (
            xurs(["swap-sweep", "--out", str(out), "--label", "data.seed", "--project", a, "--project", b])
            == 0
        )
        footers.append(pd.read_csv(out / "swap_sweep.csv")["config_hash"].iloc[0])
    assert footers[0] == footers[1] != footers[2]


def test_the_studies_kept_beside_the_table_rebuild_it(tmp_path, capsys):
    """``<out>/swap_sweep.inputs`` holds each pooled study; ``--kept`` rebuilds the same files from them."""
    a, b = project(tmp_path / "a", study((25, 28))), project(tmp_path / "b", study((26, 28)), seed=2)
    code, _ = sweep(tmp_path, capsys, "--label", "data.seed", "--project", a, "--project", b)
    assert code == 0
    kept = sorted((tmp_path / "out" / "swap_sweep.inputs").glob("*.json"))
    assert [json.loads(p.read_text())["column"] for p in kept] == ["data.seed=1", "data.seed=2"]
    assert xurs(["swap-sweep", "--kept", str(tmp_path / "out" / "swap_sweep.inputs"), "--out",
                 str(tmp_path / "again")]) == 0  # fmt: skip
    for name in ("swap_sweep.md", "swap_sweep.tex", "swap_sweep.csv", "swap_sweep.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "out" / name).read_bytes(), name
    assert "| paper | 25/28 | 26/28 |" in (tmp_path / "again" / "swap_sweep.md").read_text()
