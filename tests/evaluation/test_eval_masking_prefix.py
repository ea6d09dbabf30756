"""Zero-masking from the unmasked prompt's key/value cache (``evaluation.mask_reuse_prefix``): the same
masses as the full-length path, fewer positions run, and the full path where the model cannot reuse."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xurs_pipeline.attribution.masked import classifier_mass_fn, masked_masses, prefix_chunks
from xurs_pipeline.attribution.prefix import MIN_TOKENS
from xurs_pipeline.evaluation.masking import (
    MaskingQuestion,
    MaskingSpec,
    draw_random_sets,
    zero_masking_effects,
)
from xurs_pipeline.models import RandomSetClassifier, RandomSetHead
from xurs_pipeline.models.tiny import build_tiny_llama

VOCAB, HIDDEN, LENGTH = 64, 32, 40


def _classifier(**features) -> RandomSetClassifier:
    backbone = build_tiny_llama(VOCAB, hidden_size=HIDDEN, num_layers=3, num_heads=4, seed=0).model
    width = HIDDEN * len(features.get("feature_layers", (-1,)))
    model = RandomSetClassifier(backbone, RandomSetHead(width, "belief14", seed=1), **features)
    with torch.no_grad():
        model.head.net.bias.copy_(torch.tensor([-3.0] * 4 + [-1.2] * 6 + [0.3] * 4))
    return model.eval()


def _question(model: RandomSetClassifier, pad: int = 0) -> MaskingQuestion:
    rng = np.random.default_rng(0)
    ids = torch.tensor([[1, *rng.integers(3, VOCAB, LENGTH - 1).tolist()]])
    mask = torch.ones(LENGTH, dtype=torch.long)
    mask[:pad] = 0  # left padding
    with torch.no_grad():
        embeds = model.embed(ids)[0]
    positions = (mask.cumsum(0) - 1).clamp(min=0)
    eligible = mask.numpy().astype(bool)
    return MaskingQuestion("q", embeds, mask, positions, eligible, 1)


def _sets(q: MaskingQuestion) -> list[list[int]]:
    """The empty set, sets starting at 0 (full-length batches), and Eq. 8 / top-k style k-sets."""
    rows = draw_random_sets(np.flatnonzero(q.eligible), 12, 4, np.random.default_rng(3))
    return [[], [0], [0, 30], [2, 5], [LENGTH - 1], *[list(r[:k]) for r in rows for k in range(1, 5)]]


class _Counting:
    """Wraps a mass function and records how many positions each model call runs."""

    def __init__(self, inner):
        self.inner, self.lengths = inner, []

    def __call__(self, embeds, mask, pos):
        self.lengths.append(embeds.shape[1])
        return self.inner(embeds, mask, pos)

    def prompt_cache(self, embeds, mask, pos):
        return self.inner.prompt_cache(embeds, mask, pos)

    def after_prefix(self, cache, prefix, embeds, mask, pos):
        self.lengths.append(embeds.shape[1])
        return self.inner.after_prefix(cache, prefix, embeds, mask, pos)


@pytest.mark.parametrize(("pad", "batch_size"), [(0, 16), (0, 5), (4, 7)])
def test_prefix_path_equals_full_path(pad: int, batch_size: int) -> None:
    model = _classifier()
    q = _question(model, pad)
    sets = _sets(q)
    full = masked_masses(classifier_mass_fn(model), q, sets, batch_size, reuse_prefix=False)
    counting = _Counting(classifier_mass_fn(model))
    reused = masked_masses(counting, q, sets, batch_size, reuse_prefix=True)
    assert (full - reused).abs().max() < 1e-6
    # the variants do differ from each other, so equality is not trivial
    assert (full[1:] - full[0]).abs().max() > 1e-3
    # fewer positions were run than len(sets) x L
    assert sum(counting.lengths) < 0.8 * len(sets) * LENGTH


def test_a_wrong_prefix_cache_changes_the_masses() -> None:
    """The cache is what the suffix attends to: a cache of another prompt gives other masses."""
    model = _classifier()
    q = _question(model)
    other = MaskingQuestion("o", q.embeds.flip(0), q.attention_mask, q.position_ids, q.eligible, 1)
    fn = classifier_mass_fn(model)
    sets = [[30], [35]]
    right = masked_masses(fn, q, sets, 4)

    class _WrongCache:
        __call__ = fn.__call__
        after_prefix = fn.after_prefix

        def prompt_cache(self, embeds, mask, pos):
            return fn.prompt_cache(other.embeds[None], mask, pos)

    wrong = masked_masses(_WrongCache(), q, sets, 4)
    assert (right - wrong).abs().max() > 1e-4


def test_effects_are_the_same_with_and_without_reuse() -> None:
    model = _classifier()
    q = _question(model)
    ranking = {"width": np.arange(LENGTH, dtype=float)[::-1].copy()}
    a = zero_masking_effects(classifier_mass_fn(model), q, ranking, MaskingSpec(8, 3, 0, 6, True))[0]
    b = zero_masking_effects(classifier_mass_fn(model), q, ranking, MaskingSpec(8, 3, 0, 6, False))[0]
    np.testing.assert_allclose(a.random_delta, b.random_delta, atol=1e-6)
    np.testing.assert_allclose(a.top_delta, b.top_delta, atol=1e-6)
    assert a.f_x == pytest.approx(b.f_x, abs=1e-6)


def test_models_without_a_usable_cache_run_full_length() -> None:
    model = _classifier(feature_layers=(-1, 1))  # intermediate layers: prefix_cache declines
    q = _question(model)
    counting = _Counting(classifier_mass_fn(model))
    masked_masses(counting, q, _sets(q), 8)
    assert set(counting.lengths) == {LENGTH}


def test_prefix_chunks_cover_every_set_once_within_the_token_budget() -> None:
    model = _classifier()
    q = _question(model)
    sets = _sets(q)
    chunks = prefix_chunks(q, sets, 6)
    assert sorted(i for chunk, _ in chunks for i in chunk) == list(range(len(sets)))
    for chunk, p in chunks:
        first = [min([LENGTH - 1, *sets[i]]) for i in chunk]
        assert p <= min(first)  # no masked position inside the reused prefix
        assert p == 0 or p >= MIN_TOKENS
        assert len(chunk) <= 6
        assert len(chunk) == 1 or len(chunk) * (LENGTH - min(first)) <= 6 * LENGTH
    assert any(p > 0 for _, p in chunks)
