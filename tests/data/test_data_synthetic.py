"""Synthetic generators (Sec. 5.4, App. D): sizes, family splits, determinism, targets and V2's controls."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
import torch

from xurs_pipeline.credal import FOCAL_SETS, credal_width
from xurs_pipeline.data.synthetic import generate_v1, generate_v2, read
from xurs_pipeline.data.synthetic.v2 import UNSEEN_TEMPLATES


@pytest.fixture(scope="module")
def v1():
    return generate_v1()


@pytest.fixture(scope="module")
def v2_small():
    return generate_v2((4, 2, 2), 2, seed=3)


def split_counts(records) -> list[int]:
    counts = Counter(r.split for r in records)
    return [counts["train"], counts["dev"], counts["test"]]


def families_by_split(records) -> dict[str, set[str]]:
    out = defaultdict(set)
    for r in records:
        out[r.split].add(r.synthetic.family)
    return out


def test_v1_full_size_is_960_split_640_160_160_by_family(v1):
    assert split_counts(v1) == [640, 160, 160]
    fams = families_by_split(v1)
    assert [len(fams[s]) for s in ("train", "dev", "test")] == [80, 20, 20]
    assert len(fams["train"] | fams["dev"] | fams["test"]) == 120  # so no family is in two splits
    assert len({r.record_id for r in v1}) == 960
    assert "family007_case00_resolved" in {r.record_id for r in v1}  # the paper's naming


def test_v2_full_size_counts():
    records = generate_v2()
    assert split_counts(records) == [7680, 3840, 3840]
    fams = families_by_split(records)
    assert [len(fams[s]) for s in ("train", "dev", "test")] == [80, 20, 20]


def test_size_knob_and_determinism():
    small = generate_v1((3, 1, 2), 2, seed=4)
    assert split_counts(small) == [12, 4, 8]
    assert small == generate_v1((3, 1, 2), 2, seed=4)
    assert small != generate_v1((3, 1, 2), 2, seed=5)
    assert split_counts(generate_v2((2, 1, 1), 1, seed=4)) == [32, 32, 32]  # dev/test: seen + unseen template


def label_width(record) -> float:
    masses = torch.tensor(record.synthetic.target_masses, dtype=torch.float64)
    return float(credal_width(masses)[record.answer_idx])


def test_targets_are_distributions_with_lower_width_given_the_result(v1, v2_small):
    for record in v1 + v2_small:
        masses = record.synthetic.target_masses
        assert len(masses) == 15
        assert sum(masses) == pytest.approx(1.0)
        assert min(masses) >= 0
        expected = 0.1 if record.synthetic.has_result else 0.8
        assert label_width(record) == pytest.approx(expected)


def singleton_pair(record) -> tuple[float, float]:
    """(label singleton mass, other plausible singleton mass) of an unresolved record."""
    m = record.synthetic.target_masses
    pair = next(s for s, v in zip(FOCAL_SETS, m, strict=True) if len(s) == 2 and v > 0)
    other = pair[1] if pair[0] == record.answer_idx else pair[0]
    return m[FOCAL_SETS.index((record.answer_idx,))], m[FOCAL_SETS.index((other,))]


def test_v1_keeps_its_documented_flaws_and_the_flag_removes_them(v1):
    unresolved = [r for r in v1 if not r.synthetic.has_result]
    assert {singleton_pair(r) for r in unresolved} == {(0.15, 0.05)}  # flaw 2: unequal singletons
    fixed = [r for r in generate_v1((4, 1, 1), 4, reproduce_flaws=False) if not r.synthetic.has_result]
    assert {singleton_pair(r) for r in fixed} == {(0.1, 0.1)}


def test_v2_arrangements_remap_targets_to_the_same_conditions(v2_small):
    by_pair_base = defaultdict(list)
    for r in v2_small:
        key = r.record_id.rsplit("_a", 1)[0] + r.synthetic.variant
        by_pair_base[key].append(r)
    for group in by_pair_base.values():
        assert sorted(r.synthetic.arrangement for r in group) == [0, 1, 2, 3]
        base = next(r for r in group if r.synthetic.arrangement == 0)
        for r in group:
            assert r.options == tuple(base.options[(k + r.synthetic.arrangement) % 4] for k in range(4))
            assert r.options[r.answer_idx] == base.options[base.answer_idx]
            named = {
                frozenset(r.options[i] for i in s): v
                for s, v in zip(FOCAL_SETS, r.synthetic.target_masses, strict=True)
            }
            named_base = {
                frozenset(base.options[i] for i in s): v
                for s, v in zip(FOCAL_SETS, base.synthetic.target_masses, strict=True)
            }
            assert named == named_base


def test_v2_detail_pairs_share_targets_and_unresolved_singletons_are_equal(v2_small):
    by_case = defaultdict(dict)
    for r in v2_small:
        key = (r.record_id.replace("morning", "*").replace("evening", "*"),)
        by_case[key][r.synthetic.detail] = r
    for pair in by_case.values():
        assert set(pair) == {"morning", "evening"}
        morning, evening = pair["morning"], pair["evening"]
        assert morning.synthetic.target_masses == evening.synthetic.target_masses
        assert morning.question.replace("morning", "evening") == evening.question
    unresolved = [r for r in v2_small if not r.synthetic.has_result]
    assert {singleton_pair(r) for r in unresolved} == {(0.1, 0.1)}


def test_v2_unseen_templates_only_outside_training_and_test_order_varies(v2_small):
    for r in v2_small:
        assert r.synthetic.template_unseen == (r.synthetic.template_id in UNSEEN_TEMPLATES)
        if r.split == "train":
            assert not r.synthetic.template_unseen
    assert any(r.synthetic.template_unseen for r in v2_small if r.split == "dev")


def first_test_points_to_label(records) -> float:
    """Share of cases (one record each) whose first-named test singles out the labelled answer."""
    cases = [
        r
        for r in records
        if r.synthetic.has_result and r.synthetic.arrangement == 0 and r.synthetic.detail != "evening"
    ]
    return sum(read(r).first_test_option == r.answer_idx for r in cases) / len(cases)


def test_test_order_is_tied_to_the_label_in_v1_only(v1):
    assert first_test_points_to_label(v1) == 1.0  # flaw 1: the answer-order shortcut
    assert 0.35 < first_test_points_to_label(generate_v1(reproduce_flaws=False)) < 0.65
    assert 0.35 < first_test_points_to_label(generate_v2((20, 1, 1), 6, seed=0)) < 0.65
