"""The engine on the project's real RandomSetClassifier and prepared synthetic data; ``explain``."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import transformers
from captum.attr import GradientShap

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.endpoints import prompt_of
from xurs_pipeline.attribution.gradients import accumulate
from xurs_pipeline.attribution.inputs import AttributionInputError, select_questions
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.model import Objective
from xurs_pipeline.attribution.plan import eg_plan
from xurs_pipeline.attribution.references import prepare_aligned, prepare_training
from xurs_pipeline.credal import credal_width
from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import load_records
from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.schema import PROMPT_COLUMNS, prompts_provenance
from xurs_pipeline.explain import Explanation, InlineQuestion, explain
from xurs_pipeline.io import write_parquet
from xurs_pipeline.models.backbone import load_backbone_dir, materialize_backbone
from xurs_pipeline.models.checkpoint import build_classifier, load_classifier, save_classifier

transformers.utils.logging.disable_progress_bar()
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny backbone, a classifier with a random (seeded) head, and prepared synthetic V1 prompts."""
    root = tmp_path_factory.mktemp("attr_classifier")
    materialize_backbone(root / "backbone", "tiny")
    backbone = load_backbone_dir(root / "backbone")
    classifier = build_classifier(backbone, seed=3)
    with torch.no_grad():  # beliefs growing with set size, so pairs and triples keep mass (W_c > 0)
        classifier.head.net.bias.copy_(torch.tensor([-3.0] * 4 + [-1.2] * 6 + [0.3] * 4))
    save_classifier(classifier, root / "classifier")
    records = load_records(DataConfig(source="synthetic_v1", families=[2, 1, 1], cases_per_family=2))
    frame = prepare_records(records, backbone.tokenizer, 512).frame
    write_parquet(frame, root / "prompts.parquet", prompts_provenance(), PROMPT_COLUMNS)
    return root


def _loaded(workspace: Path):
    model, tokenizer = load_classifier(workspace / "classifier")
    return model, tokenizer, pd.read_parquet(workspace / "prompts.parquet")


def test_eg_on_the_classifier_agrees_with_captum(workspace: Path) -> None:
    model, tokenizer, prompts = _loaded(workspace)
    cfg = AttributionConfig(refs_per_collection=4, n_samples=8, samples_per_call=4, progress=False)
    (q, *_) = select_questions(prompts, cfg, 1024)
    train = prompts[prompts.split == "train"].iloc[:4]
    refs = prepare_training(
        q.input_ids, list(train.input_ids), list(train.record_id), tokenizer.pad_token_id, CPU
    )
    prompt = prompt_of(model, q.input_ids, CPU)
    ours = accumulate(model, Objective.build((1,), "direct"), prompt, refs, eg_plan(4, 8, 11), 4).e[0]

    def width(z, mask, pos):
        return credal_width(model(z, mask, pos).masses)[:, 1]

    np.random.seed(11)  # noqa: NPY002  GradientShap's own draws replay the plan
    extra = (prompt.attention_mask, prompt.position_ids)
    theirs = GradientShap(width).attribute(
        prompt.embeds,
        baselines=model.embed(refs.prepared_ids),
        n_samples=8,
        stdevs=0.0,
        additional_forward_args=extra,
    )
    torch.testing.assert_close(ours, theirs[0], atol=1e-6, rtol=1e-4)
    assert ours.abs().max() > 0
    assert not any(p.requires_grad for p in model.parameters())  # weights stay frozen afterwards


def test_routes_agree_on_the_classifier(workspace: Path) -> None:
    model, tokenizer, prompts = _loaded(workspace)
    rows = {}
    for route in ("direct", "answer_set"):
        cfg = AttributionConfig(
            reference="zero",
            refs_per_collection=1,
            n_samples=4,
            samples_per_call=4,
            route=route,
            progress=False,
        )
        q = select_questions(prompts, cfg, 1024)[0]
        rows[route] = attribute_question(model, q, None, cfg, tokenizer.pad_token_id).rows
    for a, b in zip(rows["direct"], rows["answer_set"], strict=True):
        torch.testing.assert_close(a.coords["e"], b.coords["e"], atol=1e-6, rtol=1e-4)


def test_aligned_reference_pads_the_distinguishing_result(workspace: Path) -> None:
    model, tokenizer, prompts = _loaded(workspace)
    cfg = AttributionConfig(
        reference="aligned", refs_per_collection=1, method="ig", ig_points=4, progress=False
    )
    questions = select_questions(prompts, cfg, 1024)
    assert questions
    by_id = prompts.set_index("record_id")
    for q in questions:
        assert bool(by_id.loc[q.record_id, "has_result"])
        assert not bool(by_id.loc[q.paired_id, "has_result"])
        aligned = prepare_aligned(q.input_ids, q.paired_ids, q.paired_id, tokenizer.pad_token_id, CPU)
        clue = set(by_id.loc[q.record_id, "clue_positions"])
        assert clue
        assert clue <= set(aligned.changed_positions[0])
    result = attribute_question(model, questions[0], None, cfg, tokenizer.pad_token_id)
    (row,) = result.rows
    e = row.coords["e"]
    unchanged = sorted(set(range(row.n_tokens)) - set(row.changed_positions))
    assert e[unchanged].abs().max() == 0  # identical input and reference embeddings
    assert row.residual < 0.05


VOID_ELEMENTS = ("area", "br", "col", "hr", "img", "input", "link", "meta", "wbr")


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID_ELEMENTS:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag

    def handle_data(self, data):
        self.text.append(data)


def test_explain_record_prints_top_tokens_and_writes_html(workspace: Path, tmp_path: Path) -> None:
    prompts = pd.read_parquet(workspace / "prompts.parquet")
    record_id = prompts[prompts.split == "test"].record_id.iloc[0]
    cfg = AttributionConfig(refs_per_collection=3, n_samples=6, progress=False)
    expl = explain(
        workspace / "classifier", record_id=record_id, prompts_path=workspace / "prompts.parquet", config=cfg
    )
    top = expl.top_tokens(5)
    assert [t.magnitude for t in top] == sorted((t.magnitude for t in top), reverse=True)
    assert all(expl.eligible[t.position] for t in top)
    assert max(m for m, ok in zip(expl.token_magnitude, expl.eligible, strict=True) if ok) == top[0].magnitude
    assert "".join(expl.tokens[1:]) == expl.prompt  # token texts tile the prompt after BOS
    for k in range(4):
        assert expl.belief[k] <= expl.plausibility[k]
        assert np.isclose(expl.plausibility[k] - expl.belief[k], expl.width[k], atol=1e-6)
    assert expl.target == int(np.argmax(expl.betp)) == expl.predicted
    assert record_id in expl.format_top(3)
    page = expl.to_html(tmp_path / "x.html").read_text()
    checker = _Checker()
    checker.feed(page)
    assert checker.stack == []
    text = "".join(checker.text)
    assert expl.options[0] in text
    assert "Bel" in page
    assert "Pl" in page
    saved = Explanation.load(expl.save(tmp_path / "x.json"))
    assert saved == expl


def test_explain_inline_question_and_bad_calls(workspace: Path) -> None:
    cfg = AttributionConfig(reference="zero", refs_per_collection=1, n_samples=4, progress=False)
    expl = explain(
        workspace / "classifier",
        inline=InlineQuestion("A man has a fever and a rash.", ["flu", "measles", "lupus", "mumps"]),
        config=cfg,
        option=2,
    )
    assert expl.target == 2
    assert expl.record_id == "inline"
    assert expl.options == ["flu", "measles", "lupus", "mumps"]
    assert {"question", "option_C"} <= set(expl.sections)
    with pytest.raises(AttributionInputError, match="either record_id"):
        explain(workspace / "classifier", config=cfg)
    with pytest.raises(AttributionInputError, match="needs prompts_path"):
        explain(workspace / "classifier", record_id="x", config=cfg)
    with pytest.raises(AttributionInputError, match="exactly 4 options"):
        explain(workspace / "classifier", inline=InlineQuestion("q?", ["a", "b"]), config=cfg)
    with pytest.raises(AttributionInputError, match="not in the prepared data"):
        explain(
            workspace / "classifier", record_id="nope", prompts_path=workspace / "prompts.parquet", config=cfg
        )
