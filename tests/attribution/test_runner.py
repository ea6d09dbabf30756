"""Sharding, atomic parts, resume and bad inputs of a whole attribution run."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
import torch
from helpers import PAD_ID, TinyBeliefClassifier, prompts_frame
from safetensors.torch import load_file

from xurs_pipeline.attribution import runner
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import AttributionInputError
from xurs_pipeline.attribution.runner import ATTRIBUTIONS_FILE, COORDS_DIR, RunOutput, Shard, run_attribution
from xurs_pipeline.credal import credal_width
from xurs_pipeline.io import read_json, read_parquet
from xurs_pipeline.reporting.headline import attribute_headline


class Interrupt(RuntimeError):
    pass


class Counting(torch.nn.Module):
    """Wraps a model; counts forward calls and gradient samples; raises after ``fail_after`` calls."""

    def __init__(self, inner: torch.nn.Module, fail_after: int | None = None) -> None:
        super().__init__()
        self.inner, self.calls, self.grad_samples, self.fail_after = inner, 0, 0, fail_after

    def embed(self, input_ids):
        return self.inner.embed(input_ids)

    def forward(self, *args):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise Interrupt("simulated crash")
        if args[0].requires_grad:
            self.grad_samples += args[0].shape[0]
        return self.inner(*args)


CFG = {"progress": False, "refs_per_collection": 3, "n_samples": 6, "samples_per_call": 4, "target": "all"}


def _run(
    model,
    frame,
    out: Path,
    shards: int = 1,
    fingerprint: str = "fp",
    part_fingerprint: str | None = None,
    **overrides,
):
    cfg = AttributionConfig(**{**CFG, **overrides})
    metrics = None
    for index in reversed(range(shards)):  # in-process simulation: shard 0 runs last and merges
        metrics = run_attribution(
            model,
            frame,
            cfg,
            pad_id=PAD_ID,
            max_positions=64,
            out=RunOutput(out, fingerprint, part_fingerprint),
            shard=Shard(index, shards),
        )
    return metrics


def _load(out: Path) -> tuple[pd.DataFrame, dict[str, dict[str, torch.Tensor]]]:
    frame = read_parquet(out / ATTRIBUTIONS_FILE)
    coords = {name: load_file(out / COORDS_DIR / name) for name in frame["coords_file"]}
    return frame, coords


def _assert_same(a: Path, b: Path) -> None:
    frame_a, coords_a = _load(a)
    frame_b, coords_b = _load(b)
    pd.testing.assert_frame_equal(frame_a, frame_b)
    assert coords_a.keys() == coords_b.keys()
    for name in coords_a:
        torch.testing.assert_close(coords_a[name]["e"], coords_b[name]["e"], atol=0, rtol=0)


def test_merged_result_does_not_depend_on_shard_count(tmp_path: Path) -> None:
    model, frame = TinyBeliefClassifier(vocab=40), prompts_frame(n_test=3)
    one = _run(model, frame, tmp_path / "one")
    two = _run(model, frame, tmp_path / "two", shards=2)
    _assert_same(tmp_path / "one", tmp_path / "two")
    assert one == two
    assert one["rows"] == 12
    assert one["nonfinite_questions"] == 0
    table = pd.read_parquet(tmp_path / "one" / "attributions.parquet")
    per_question = table.groupby("record_id")["grad_evals"].first()  # one count a question, all its rows
    assert one["grad_evals_median"] == per_question.median()
    assert one["grad_evals"] == per_question.sum()
    shard_files = sorted(p.name for p in (tmp_path / "two" / "parts").glob("shard-*.json"))
    assert shard_files == ["shard-0-of-2.json", "shard-1-of-2.json"]
    assert read_json(tmp_path / "two" / "parts" / "shard-1-of-2.json")["computed"] == ["test-1"]


def test_interrupted_run_resumes_without_recomputing_finished_questions(tmp_path: Path) -> None:
    frame = prompts_frame(n_test=3)
    reference = TinyBeliefClassifier(vocab=40)
    _run(reference, frame, tmp_path / "clean")
    probe = Counting(reference)
    _run(probe, frame, tmp_path / "probe", record_ids=["test-0"])
    crashing = Counting(reference, fail_after=probe.calls + 2)  # pool + first question, dies in the second
    with pytest.raises(Interrupt):
        _run(crashing, frame, tmp_path / "run")
    parts = sorted(p.name for p in (tmp_path / "run" / "parts").glob("*.parquet"))
    assert len(parts) == 1
    assert parts[0].startswith("test-0.")
    assert not (tmp_path / "run" / ATTRIBUTIONS_FILE).exists()
    assert not list((tmp_path / "run" / "parts").glob(".*tmp"))  # no half-written file left
    resumed = Counting(reference)
    _run(resumed, frame, tmp_path / "run")
    assert resumed.grad_samples == 2 * CFG["n_samples"]  # the two unfinished questions only
    _assert_same(tmp_path / "clean", tmp_path / "run")
    again = Counting(reference)
    _run(again, frame, tmp_path / "run")
    assert again.calls == 0  # everything finished: nothing is recomputed, not even the pool


def test_parts_of_another_run_are_recomputed(tmp_path: Path) -> None:
    model, frame = TinyBeliefClassifier(vocab=40), prompts_frame(n_test=2)
    _run(model, frame, tmp_path / "run", fingerprint="old", n_samples=4)
    counter = Counting(model)
    _run(counter, frame, tmp_path / "run", fingerprint="new")
    _run(model, frame, tmp_path / "fresh", fingerprint="new")
    assert counter.calls > 0
    _assert_same(tmp_path / "fresh", tmp_path / "run")


def test_widening_a_run_recomputes_only_the_new_questions(tmp_path: Path) -> None:
    """Parts are keyed by the per-question fingerprint: a run of 3 questions after a run of 1 (another run
    fingerprint, the same part key) computes only the 2 new ones and equals a run made from scratch."""
    model, frame = TinyBeliefClassifier(vocab=40), prompts_frame(n_test=3)
    _run(model, frame, tmp_path / "fresh", fingerprint="three")
    _run(model, frame, tmp_path / "run", fingerprint="one", part_fingerprint="same", record_ids=["test-0"])
    widened = Counting(model)
    _run(widened, frame, tmp_path / "run", fingerprint="three", part_fingerprint="same")
    assert widened.grad_samples == 2 * CFG["n_samples"]
    _assert_same(tmp_path / "fresh", tmp_path / "run")
    other = Counting(model)  # another part key: every question again
    _run(other, frame, tmp_path / "run", fingerprint="three", part_fingerprint="changed")
    assert other.grad_samples == 3 * CFG["n_samples"]


class RecordingBar:
    """Stands in for tqdm: the bar's total when it opens and after each question."""

    opened: ClassVar[list[RecordingBar]] = []

    def __init__(self, total: int, **_: object) -> None:
        self.total, self.n, self.totals = total, 0, [total]
        RecordingBar.opened.append(self)

    def update(self, size: int) -> None:
        self.n += size

    def set_postfix(self, **_: object) -> None:
        self.totals.append(self.total)

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("overrides", "stops_early"),
    [
        (
            {
                "method": "kronrod",
                "kronrod_tolerance": 0.99,
                "kronrod_max_evals": 105,
                "samples_per_call": 15,
            },
            True,
        ),
        (
            {
                "method": "ig",
                "ig_adaptive": True,
                "ig_points": 2,
                "ig_refine_factor": 2,
                "ig_max_points": 8,
                "ig_tolerance": 1e-12,
                "samples_per_call": 8,
            },
            False,
        ),
        ({"method": "ig", "ig_points": 2}, False),
        ({"method": "eg"}, False),
    ],
)
def test_the_progress_total_starts_at_the_budget_and_ends_at_what_was_spent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overrides: dict, stops_early: bool
) -> None:
    """The bar opens at questions x ``gradient_budget`` (an upper bound, so its ETA is one) and gives back
    what an adaptive estimator left unused, ending at the gradient samples the model really ran. Adaptive
    IG at an unreachable tolerance spends every level of its schedule (2 + 4 + 8 points per reference),
    which is the budget the config states; kronrod at a loose one stops after its first pass."""
    monkeypatch.setattr(runner, "tqdm", RecordingBar)
    model, frame = Counting(TinyBeliefClassifier(vocab=40)), prompts_frame(n_test=2)
    _run(model, frame, tmp_path, progress=True, **overrides)
    bar = RecordingBar.opened[-1]
    budget = AttributionConfig(**{**CFG, **overrides}).gradient_budget().per_question
    assert bar.totals[0] == 2 * budget
    assert bar.n == bar.total == model.grad_samples > 0
    assert (bar.total < 2 * budget) == stops_early
    assert bar.totals == sorted(bar.totals, reverse=True)  # it only shrinks


def test_ig_on_block_paths_counts_references_x_pieces_x_points(tmp_path: Path, monkeypatch) -> None:
    """IG on a block path spends its points on every piece: the bar opens at references x pieces (one per
    block of each question's own length) x points per question, which bounds what runs (blocks where a
    reference equals the question are skipped) and is far above references x points; a question that
    would need more than ``attribution.max_grad_evals`` is refused before any gradient, naming the key."""
    monkeypatch.setattr(runner, "tqdm", RecordingBar)
    model, frame = Counting(TinyBeliefClassifier(vocab=40)), prompts_frame(n_test=2)
    blocks = {
        "method": "ig",
        "ig_points": 2,
        "path": "blocks",
        "path_block": 2,
        "samples_per_call": 8,
        "target": "predicted",
    }
    _run(model, frame, tmp_path / "a", progress=True, **blocks)
    bar = RecordingBar.opened[-1]
    lengths = [len(ids) for ids in frame.loc[frame.split == "test", "input_ids"]]
    assert bar.totals[0] == sum(CFG["refs_per_collection"] * -(-n // 2) * 2 for n in lengths)
    assert 2 * CFG["refs_per_collection"] * 2 < bar.n == model.grad_samples <= bar.totals[0]
    before = model.grad_samples
    tight = {**blocks, "max_grad_evals": CFG["refs_per_collection"] * 2}  # enough for the straight path only
    with pytest.raises(
        AttributionInputError,
        match=r"attribution\.max_grad_evals=6: ig needs up to .* x \d+ "
        r"piece\(s\) x 2 point\(s\) \(path_block=2 on prompts of up to \d+ tokens, record ",
    ):
        _run(model, frame, tmp_path / "b", **tight)
    assert model.grad_samples == before
    assert not (tmp_path / "b").exists()


def test_nonfinite_question_is_reported_not_written(tmp_path: Path) -> None:
    model, frame = TinyBeliefClassifier(vocab=40), prompts_frame(n_test=2)
    token = int(frame[frame.record_id == "train-1"]["input_ids"].iloc[0][1])
    with torch.no_grad():
        model.backbone.embed_tokens.weight[token] = float("nan")
    metrics = _run(model, frame, tmp_path, target="predicted")
    failures = read_json(tmp_path / "nonfinite.json")["failures"]
    table = read_parquet(tmp_path / ATTRIBUTIONS_FILE)
    failed = {f["record_id"] for f in failures}
    assert metrics["nonfinite_questions"] == len(failures) >= 1
    assert all("train-1" in f["reference_ids"] for f in failures if f["where"] != "input width")
    assert failed.isdisjoint(table["record_id"])
    assert len(table) == 2 - len(failed)


@pytest.mark.parametrize(
    ("overrides", "frame_edit", "message"),
    [
        ({"record_ids": ["test-0", "nope"]}, None, "['nope'] not in the prepared data"),
        ({}, "no_eligible", "record test-1: no eligible token"),
        ({"refs_per_collection": 4, "n_collections": 2}, None, "8 training prompts needed"),
        ({}, "too_long", "more than the model's context of 64"),
        ({"reference": "aligned", "refs_per_collection": 1}, None, "no pair_id/has_result columns"),
        ({"split": "dev"}, None, "no questions to attribute"),
    ],
)
def test_bad_inputs_raise_clear_errors_and_write_nothing(
    tmp_path: Path, overrides: dict, frame_edit: str | None, message: str
) -> None:
    frame = prompts_frame(n_test=2)
    if frame_edit == "no_eligible":
        frame.at[frame.index[frame.record_id == "test-1"][0], "eligible"] = [False] * 9
    if frame_edit == "too_long":
        frame.at[frame.index[frame.record_id == "test-0"][0], "input_ids"] = list(range(3, 3 + 70))
    with pytest.raises(AttributionInputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _run(TinyBeliefClassifier(vocab=80), frame, tmp_path / "out", **overrides)
    assert not (tmp_path / "out").exists()


def _paired_frame(without_result: list[int], with_result: list[int]) -> pd.DataFrame:
    """One training prompt and one test pair p0: ``p0-with`` (has the result) and ``p0-without``."""
    frame = prompts_frame(n_test=0, n_train=1)
    pairs = pd.DataFrame(
        [
            {
                "record_id": "p0-with",
                "split": "test",
                "input_ids": with_result,
                "answer_idx": 1,
                "eligible": [False] + [True] * (len(with_result) - 1),
                "pair_id": "p0",
                "has_result": True,
            },
            {
                "record_id": "p0-without",
                "split": "test",
                "input_ids": without_result,
                "answer_idx": 1,
                "eligible": [False] + [True] * (len(without_result) - 1),
                "pair_id": "p0",
                "has_result": False,
            },
        ]
    )
    return pd.concat([frame.assign(pair_id="", has_result=False), pairs], ignore_index=True)


def test_result_filter_explains_the_uncertain_member_against_its_partner(tmp_path: Path) -> None:
    """``result_filter=without_result``: the prompt without the result is the question and its partner
    with the result, aligned to it, the reference: only the positions the partner lacks get attribution."""
    with_result = [1, 5, 6, 7, 9, 9, 8, 4]
    without = [1, 5, 6, 7, 9, 9, 3, 3, 8, 4]  # the uncertain prompt names two things, the other one
    frame = _paired_frame(without, with_result)
    model = TinyBeliefClassifier(vocab=40)
    common = dict(reference="aligned", refs_per_collection=1, method="ig", ig_points=4, target="all")
    _run(model, frame, tmp_path / "wo", result_filter="without_result", **common)
    rows = read_parquet(tmp_path / "wo" / ATTRIBUTIONS_FILE)
    assert set(rows["record_id"]) == {"p0-without"}
    assert set(rows.iloc[0]["reference_record_ids"]) == {"p0-with"}
    assert list(rows.iloc[0]["prepared_input_ids"]) == [1, 5, 6, 7, 9, 9, PAD_ID, PAD_ID, 8, 4]
    assert list(rows.iloc[0]["changed_positions"]) == [6, 7]
    _run(model, frame, tmp_path / "all", result_filter="all", **common)  # aligned: all = with_result
    assert set(read_parquet(tmp_path / "all" / ATTRIBUTIONS_FILE)["record_id"]) == {"p0-with"}
    _run(model, frame, tmp_path / "train", result_filter="without_result", refs_per_collection=1)  # any kind
    assert set(read_parquet(tmp_path / "train" / ATTRIBUTIONS_FILE)["record_id"]) == {"p0-without"}
    with pytest.raises(AttributionInputError, match=r"result_filter='with_result'.*has_result"):
        _run(model, prompts_frame(n_test=2, n_train=3), tmp_path / "medqa", result_filter="with_result")


def test_aligned_reference_uses_the_paired_prompt(tmp_path: Path) -> None:
    base = [1, 5, 6, 7, 8, 4]
    with_result = [1, 5, 6, 7, 9, 9, 8, 4]
    frame = _paired_frame(base, with_result)
    model = TinyBeliefClassifier(vocab=40)
    _run(
        model,
        frame,
        tmp_path,
        reference="aligned",
        refs_per_collection=1,
        method="ig",
        ig_points=4,
        target="all",
    )
    rows = list(read_parquet(tmp_path / ATTRIBUTIONS_FILE).itertuples())
    row = rows[0]
    assert row.record_id == "p0-with"
    assert list(row.reference_record_ids) == ["p0-without"]
    assert list(row.prepared_input_ids) == [1, 5, 6, 7, PAD_ID, PAD_ID, 8, 4]
    assert list(row.changed_positions) == [4, 5]
    e = load_file(tmp_path / COORDS_DIR / row.coords_file)["e"]
    assert e[[0, 1, 2, 3, 6, 7]].abs().max() == 0  # identical embeddings get exactly zero attribution
    with torch.no_grad():  # Eq. 10's two reference widths, evaluated independently
        natural = credal_width(
            model(
                model.embed(torch.tensor([base])), torch.ones(1, 6, dtype=torch.long), torch.arange(6)[None]
            ).masses
        )[0]
        prepared = credal_width(
            model(
                model.embed(torch.tensor([list(row.prepared_input_ids)])),
                torch.ones(1, 8, dtype=torch.long),
                torch.arange(8)[None],
            ).masses
        )[0]
    for r in rows:
        assert abs(r.width_reference_natural[0] - float(natural[r.target])) < 1e-6
        assert abs(r.width_reference_prepared[0] - float(prepared[r.target])) < 1e-6
    assert (natural - prepared).abs().max() > 1e-3  # preparation changed the reference's width


def test_metrics_name_each_question_whose_budget_ran_out_with_the_r_it_reached(tmp_path: Path) -> None:
    """``metrics.json`` names every question whose estimator ran out of budget, each with the largest R
    (Eq. 9) over its explained answers (recomputed from the table), and the headline counts them; a run
    that never runs out names none."""
    model, frame = TinyBeliefClassifier(vocab=40), prompts_frame(n_test=2)
    starved = _run(
        model,
        frame,
        tmp_path / "starved",
        method="certified",
        certified_tolerance=1e-9,
        certified_max_evals=6,
    )
    table = pd.read_parquet(tmp_path / "starved" / "attributions.parquet")
    assert table["budget_exhausted"].all()
    reached = table.groupby("record_id")["residual"].max()
    assert starved["budget_exhausted"] == sorted(reached.index)
    assert starved["budget_exhausted_residual"] == pytest.approx(reached.to_dict())
    assert (table.groupby("record_id")["residual"].nunique() > 1).all()  # the largest of several answers
    assert attribute_headline(starved)["exhausted"] == 2
    met = _run(model, frame, tmp_path / "met")  # EG's fixed draws: never out of budget
    assert met["budget_exhausted"] == []
    assert met["budget_exhausted_residual"] == {}
    assert attribute_headline(met)["exhausted"] == 0


def test_a_certified_budget_too_small_for_the_tolerance_is_flagged_and_an_ample_one_is_not(tmp_path: Path):
    """The same tolerances, two budgets: the first pass alone (2 points a reference) cannot meet them, so
    that question is flagged ``budget_exhausted`` with the R it reached (its row's, in ``metrics.json``); a
    budget the rule stops within flags nothing."""
    model, frame = TinyBeliefClassifier(vocab=40), prompts_frame(n_test=1)
    rule = {"method": "certified", "certified_tolerance": 0.1, "certified_vector_tolerance": 1.0}
    rule |= {"target": "predicted", "certified_max_evals": 6}
    starved = _run(model, frame, tmp_path / "starved", **rule)
    table = pd.read_parquet(tmp_path / "starved" / "attributions.parquet")
    assert table["budget_exhausted"].all()
    assert (table["grad_evals"] == 6).all()
    reached = table.set_index("record_id")["residual"].to_dict()
    assert starved["budget_exhausted_residual"] == pytest.approx(reached)
    ample = _run(model, frame, tmp_path / "ample", **(rule | {"certified_max_evals": 256}))
    table = pd.read_parquet(tmp_path / "ample" / "attributions.parquet")
    assert not table["budget_exhausted"].any()
    assert (table["grad_evals"] < 256).all()  # the rule held: it stopped on its own, not at the budget
    assert (ample["budget_exhausted"], ample["budget_exhausted_residual"]) == ([], {})
    assert ample["residual_max"] <= 0.1
