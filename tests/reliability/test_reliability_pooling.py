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
    counts = {
        f"{p}_{c}": v
        for p in ("swap", "agreement", "agreement_A", "agreement_B", "agreement_clear")
        for c, v in zip("kn", clear, strict=True)
    }
    return {"methods": {"paper": counts}, "behaves_as_trained": {r: {"k": 15, "n": 16} for r in "AB"}}


def project(
    root: Path, summary: dict, seed: int = 1, method: str = "eg", name: str = "controlled_swap"
) -> str:
    """A project run elsewhere: params.yaml and its swap study where paths.artifacts says."""
    (root / "data/swap/study").mkdir(parents=True)
    attribution = {"method": method, "progress": seed % 2 == 0}
    evaluation = {"swap_randomise": "head" if seed == 1 else "none"}  # one seed carries the sanity runs
    params = {
        "experiment_name": name,
        "paths": {"artifacts": "data", "results": "results"},
        "data": {"seed": seed},
        "attribution": attribution,
        "evaluation": evaluation,
    }
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
    roots = [project(tmp_path / d / "xurs", study((20 + i, 28))) for i, d in enumerate("abc")]
    code, _ = sweep(tmp_path, capsys, *(a for r in roots for a in ("--project", r)))
    assert code == 0
    got = table(tmp_path)
    assert got.loc["paper", "agreement_clear_text"].endswith(f"({20 + 21 + 22}/{3 * 28})")
    assert {c for c in got.columns if c.startswith("xurs")} == {
        "xurs",
        "xurs (xurs)",
        f"xurs (--project {roots[2]})",
    }
    assert "swap sweep (3 experiments)" in (tmp_path / "out" / "swap_sweep.md").read_text()


@pytest.mark.parametrize(
    ("key", "other"),
    [("attribution.method", {"method": "ig"}), ("experiment_name", {"name": "controlled_swap_b"})],
)
def test_studies_of_other_settings_pool_only_when_the_key_is_compared(tmp_path, capsys, key, other):
    a = project(tmp_path / "a", study((25, 28)))
    b = project(tmp_path / "b", study((26, 28)), **other)
    code, line = sweep(tmp_path, capsys, "--project", a, "--project", b)
    assert code == 2
    assert f"--project {a} has {key}=" in line
    assert f"studies made with other settings are not pooled; compare them with --label {key}" in line
    code, _ = sweep(tmp_path, capsys, "--project", a, "--project", b, "--label", key)
    assert code == 0
    assert table(tmp_path).loc["paper", "agreement_clear_text"].endswith("(51/56)")


def test_settings_that_change_no_result_may_differ(tmp_path, capsys):
    """attribution.progress (the progress bar) and evaluation.swap_randomise (the randomised sanity runs,
    carried by seed 1 only) differ between seed 1 and seed 2: pooled."""
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
    """A method's measure of a role with no probes has no k and n (``swap.agreement.descriptions``)."""
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
    assert (
        xurs(
            [
                "swap-sweep",
                "--kept",
                str(tmp_path / "out" / "swap_sweep.inputs"),
                "--out",
                str(tmp_path / "again"),
            ]
        )
        == 0
    )
    for name in ("swap_sweep.md", "swap_sweep.tex", "swap_sweep.csv", "swap_sweep.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "out" / name).read_bytes(), name
    assert "| paper | 25/28 | 26/28 |" in (tmp_path / "again" / "swap_sweep.md").read_text()


EXAMPLE = Path(__file__).resolve().parents[2] / "results" / "sweeps" / "swap_example" / "swap_sweep.inputs"


def kept_copy(tmp: Path, edit=None, index: int = 0) -> tuple[Path, Path]:
    """The kept example's studies copied to ``tmp/kept``, the ``index``-th edited by ``edit``; (dir, file)."""
    kept = shutil.copytree(EXAMPLE, tmp / "kept")
    file = sorted(kept.glob("*.json"))[index]
    if edit is not None:
        study = json.loads(file.read_text())
        edit(study)
        file.write_text(json.dumps(study))
    return kept, file


def _paper(study: dict) -> dict:
    return study["summary"]["methods"]["paper"]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            lambda s: _paper(s).update(agreement_clear_k=30, agreement_clear_n=3),
            "summary: methods.paper.agreement_clear: agreement_clear_k=30, agreement_clear_n=3 are not "
            "counts",
        ),
        (lambda s: _paper(s).update(swap_k=-1), "summary: methods.paper.swap: swap_k=-1"),
        (lambda s: s.pop("params"), "not a kept swap study (missing params)"),
        (lambda s: s.update(params=["data.seed"]), "params: must map dotted keys to values"),
        (lambda s: s.update(column=7), "column=7: must be a name"),
        (lambda s: s["faithfulness_rows"].pop("agrees"), "faithfulness_rows: must map each of"),
        (lambda s: s["faithfulness_rows"]["agrees"].append(1.0), "all of one length"),
        (
            lambda s: s["faithfulness_rows"]["agrees"].__setitem__(3, "yes"),
            "faithfulness_rows.agrees[3]='yes': must be a number or null",
        ),
        (
            lambda s: s["faithfulness_rows"]["clear"].__setitem__(0, None),
            "faithfulness_rows.clear[0]=None: must be true/false",
        ),
    ],
    ids=[
        "k-above-n",
        "negative",
        "missing-key",
        "params-list",
        "column-number",
        "rows-column",
        "rows-length",
        "rows-text",
        "rows-null-flag",
    ],
)
def test_a_kept_study_meets_the_checks_of_a_live_one(tmp_path, capsys, edit, words):
    """``--kept`` ran none of ``--project``'s checks: a clear count hand-edited above its n (30 of 3) passed
    the method, a negative count was pooled, malformed rows pooled as NaN, a missing key or a wrong type
    was a traceback. Now one line naming the file."""
    kept, file = kept_copy(tmp_path, edit)
    code, line = sweep(tmp_path, capsys, "--kept", str(kept))
    assert code == 2
    assert line.startswith(f"xurs swap-sweep: error: {file}")
    assert words in line


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda s: s["params"].update({"data.swap_order": "fixed"}), "data.swap_order='fixed'"),
        (lambda s: s["params"].update({"attribution.method": "ig"}), "attribution.method='ig'"),
        (lambda s: s["params"].update({"experiment_name": "local"}), "experiment_name='local'"),
        (lambda s: s["params"].update({"train.lr_head": 0.5}), "train.lr_head=0.5"),
    ],
    ids=["swap-order", "method", "experiment", "training"],
)
def test_kept_studies_of_other_settings_are_not_pooled(tmp_path, capsys, edit, words):
    """A kept study of another cue order, method, experiment or training beside the others pooled into one
    verdict; its columns name data.seed only, so every other key must agree."""
    kept, file = kept_copy(tmp_path, edit, index=1)
    code, line = sweep(tmp_path, capsys, "--kept", str(kept))
    assert code == 2
    assert f"{file} (experiment seed-1) {words}" in line
    assert "studies made with other settings are not pooled" in line


def test_a_kept_study_twice_or_a_column_twice_is_refused(tmp_path, capsys):
    """A copy of a kept file counted one study twice; two files of one column dropped one silently."""
    kept, first = kept_copy(tmp_path)
    shutil.copy(first, kept / "03.json")
    code, line = sweep(tmp_path, capsys, "--kept", str(kept))
    assert code == 2
    assert "are both column 'data.seed=1'" in line
    study = json.loads(first.read_text())
    study["column"] = "data.seed=1 (again)"
    (kept / "03.json").write_text(json.dumps(study))
    code, line = sweep(tmp_path, capsys, "--kept", str(kept))
    assert code == 2
    assert "are the same source: pooling both would count one study twice" in line
    study["where"] = "experiment seed-9"  # the same content under another name
    (kept / "03.json").write_text(json.dumps(study))
    code, line = sweep(tmp_path, capsys, "--kept", str(kept))
    assert code == 2
    assert "hold the same content: pooling both would count one study twice" in line


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("data", "swap_order", "fixed"),
        ("model", "tiny_seed", 3),
        ("train", "lr_head", 0.5),
        ("evaluation", "swap_clear_margin", 0.3),
    ],
)
def test_projects_of_other_data_model_or_training_are_not_replicates(tmp_path, capsys, section, key, value):
    """``--project`` pooled studies of another cue order, model, training or evaluation as replicates; now
    refused unless ``--label`` names the key (then each is its own column)."""
    a = project(tmp_path / "a", study((25, 28)))
    b = project(tmp_path / "b", study((26, 28)))
    for root, setting in ((a, None), (b, value)):  # a at another value (the defaults' stand-in)
        params = yaml.safe_load((Path(root) / "params.yaml").read_text())
        params.setdefault(section, {})[key] = setting
        (Path(root) / "params.yaml").write_text(yaml.safe_dump(params))
    code, line = sweep(tmp_path, capsys, "--project", a, "--project", b)
    assert code == 2
    assert f"{section}.{key}" in line
    assert "studies made with other settings are not pooled" in line
    assert sweep(tmp_path, capsys, "--project", a, "--project", b, "--label", f"{section}.{key}")[0] == 0


def test_a_copy_with_a_key_added_to_its_summary_is_the_same_study(tmp_path, capsys):
    """The duplicate check hashed summary.json whole: a copy with one added key counted twice."""
    q = project(tmp_path / "q", study((25, 27)))
    shutil.copytree(q, tmp_path / "copy")
    summary = tmp_path / "copy" / "data/swap/study/summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "note": "copied"}))
    code, line = sweep(tmp_path, capsys, "--project", q, "--project", str(tmp_path / "copy"))
    assert code == 2
    assert "hold the same content: pooling both would count one study twice" in line
