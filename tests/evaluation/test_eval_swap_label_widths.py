"""The path from a real model to the readings: the behaviour's label widths (``behaviour.label_widths``, the
prompts prepared as ``prepare`` prepares them, batched and padded) equal, on the unedited probe, the width
function every method explains (``Problem`` on ``classifier_mass_fn``, Eq. 2), and move when the probe
is edited; on a tiny causal classifier."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.methods.base import Counter, Problem
from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.synthetic.swap import generate_swap
from xurs_pipeline.evaluation.swap.behaviour import edited_records, label_widths
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead
from xurs_pipeline.models.tiny import build_tiny_llama, train_tiny_tokenizer

MAX_TOKENS = 256


@pytest.fixture(scope="module")
def setup():
    records = generate_swap((6, 1, 4), 4, seed=2, order="counterbalanced")
    texts = [r.question + " " + " ".join(r.options) for r in records]
    tokenizer = train_tiny_tokenizer(texts, vocab_size=400)
    backbone = build_tiny_llama(len(tokenizer), hidden_size=32, num_layers=2, num_heads=4, seed=0).model
    classifier = RandomSetClassifier(backbone, RandomSetHead(32, "belief14", seed=1)).double().eval()
    probes = [r for r in records if r.synthetic.variant == "probe"]
    return classifier, tokenizer, probes


def explained_width(classifier, tokenizer, record) -> float:
    """W of the record's label as the methods explain it: the prepared ids embedded, one unpadded row."""
    ids = prepare_records([record], tokenizer, MAX_TOKENS).frame["input_ids"][0]
    embed = classifier.backbone.get_input_embeddings()
    with torch.no_grad():
        x = embed(torch.tensor([list(map(int, ids))]))
        problem = Problem(classifier_mass_fn(classifier), x, record.answer_idx)
        return float(problem.function(Counter())(x)[0])


def test_label_widths_equal_the_explained_function_on_the_unedited_probe(setup) -> None:
    classifier, tokenizer, probes = setup
    read = label_widths(classifier, tokenizer, MAX_TOKENS, batch_size=3)
    found = read(probes)  # batched: probes of different lengths padded together
    expected = [explained_width(classifier, tokenizer, p) for p in probes]
    # classifier_outputs keeps the masses in float32 (train/predict.py): float32's precision
    np.testing.assert_allclose(found, expected, rtol=1e-6)
    shifted = [replace(p, answer_idx=(p.answer_idx + 1) % 4) for p in probes]
    other = [explained_width(classifier, tokenizer, p) for p in shifted]
    assert np.abs(np.asarray(other) - found).max() > 1e-4  # another option's width is not the label's
    assert len({len(prepare_records([p], tokenizer, MAX_TOKENS).frame["input_ids"][0]) for p in probes}) > 1


def test_an_edit_is_read_as_another_width(setup) -> None:
    classifier, tokenizer, probes = setup
    read = label_widths(classifier, tokenizer, MAX_TOKENS, batch_size=8)
    widths = read(edited_records(probes[0]))
    assert np.unique(np.round(widths, 12)).size == len(widths)  # each edit changes the explained width
