"""The 15 focal sets of a four-option random-set prediction and their index tensors.

Options are numbered 0..3 (A..D). ``FOCAL_SETS`` lists the non-empty subsets of ``{0, 1, 2, 3}`` as
sorted tuples: singletons, pairs (lexicographic), triples (lexicographic), then the full set Θ. A belief
head's 14 outputs follow ``FOCAL_SETS[:14]`` (the non-empty proper subsets, App. A); a mass vector has
15 entries in ``FOCAL_SETS`` order (Sec. 3.1).

The relations between sets (subset, membership, size) are computed once here as Python tuples and
turned into tensors per (device, dtype) on first use, cached by :func:`focal_tensors`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import torch

N_OPTIONS = 4
FOCAL_SETS: tuple[tuple[int, ...], ...] = tuple(
    subset for size in range(1, N_OPTIONS + 1) for subset in combinations(range(N_OPTIONS), size)
)
N_MASSES = len(FOCAL_SETS)  # 15: every non-empty subset of Θ
N_BELIEFS = N_MASSES - 1  # 14: every non-empty proper subset (the belief head's outputs)
FULL_SET_INDEX = N_MASSES - 1
SET_SIZES: tuple[int, ...] = tuple(len(subset) for subset in FOCAL_SETS)
FOCAL_INDEX: dict[tuple[int, ...], int] = {subset: i for i, subset in enumerate(FOCAL_SETS)}
# Contiguous index ranges of the sizes processed in turn by the conversion recursion (App. A).
SIZE_LEVELS: tuple[tuple[int, int], ...] = tuple(
    (SET_SIZES.index(size), len(SET_SIZES) - SET_SIZES[::-1].index(size)) for size in range(1, N_OPTIONS)
)


def _relation(rows: int, cols: int, holds: Callable[[int, int], bool]) -> tuple[tuple[bool, ...], ...]:
    return tuple(tuple(holds(i, j) for j in range(cols)) for i in range(rows))


# STRICT_SUBSET[i][j]: FOCAL_SETS[j] is a strict subset of FOCAL_SETS[i]   (15 x 15)
STRICT_SUBSET = _relation(N_MASSES, N_MASSES, lambda i, j: set(FOCAL_SETS[j]) < set(FOCAL_SETS[i]))
# MEMBERSHIP[i][c]: option c belongs to FOCAL_SETS[i]   (15 x 4)
MEMBERSHIP = _relation(N_MASSES, N_OPTIONS, lambda i, c: c in FOCAL_SETS[i])
# WIDTH_MEMBERSHIP[i][c]: c in FOCAL_SETS[i] and |FOCAL_SETS[i]| > 1 (the sets of Eq. 2's width sum)
WIDTH_MEMBERSHIP = _relation(N_MASSES, N_OPTIONS, lambda i, c: c in FOCAL_SETS[i] and SET_SIZES[i] > 1)


@dataclass(frozen=True)
class FocalTensors:
    """The set relations as tensors on one device in one dtype.

    strict_subset:    (15, 15) 1.0 where column set ⊊ row set.
    membership:       (15, 4)  1.0 where option c ∈ set S (Pl of singletons, Eq. 1).
    width_membership: (15, 4)  1.0 where c ∈ S and |S| > 1 (width, Eq. 2).
    pignistic:        (15, 4)  1/|S| where c ∈ S, else 0 (BetP, Eq. 2).
    sizes:            (15,)    |S|.
    """

    strict_subset: torch.Tensor
    membership: torch.Tensor
    width_membership: torch.Tensor
    pignistic: torch.Tensor
    sizes: torch.Tensor


@lru_cache(maxsize=32)
def focal_tensors(device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> FocalTensors:
    """The set relations as tensors on ``device`` in ``dtype`` (built once per pair, then cached).

    Built outside any ``torch.inference_mode()`` block, so a first call made under inference mode does
    not cache inference tensors that later autograd calls could not save for backward.
    """
    device = torch.device(device)
    with torch.inference_mode(False):
        return _build_focal_tensors(device, dtype)


def _build_focal_tensors(device: torch.device, dtype: torch.dtype) -> FocalTensors:
    def tensor(rows: Sequence[object]) -> torch.Tensor:
        return torch.tensor(rows, dtype=dtype, device=device)

    membership = tensor(MEMBERSHIP)
    sizes = tensor(SET_SIZES)
    return FocalTensors(
        strict_subset=tensor(STRICT_SUBSET),
        membership=membership,
        width_membership=tensor(WIDTH_MEMBERSHIP),
        pignistic=membership / sizes[:, None],
        sizes=sizes,
    )


@lru_cache(maxsize=64)
def event_masks(event: tuple[int, ...]) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
    """For a sorted, validated event E: which focal sets S satisfy S ⊆ E (Bel) and S ∩ E ≠ ∅ (Pl), Eq. 1."""
    members = set(event)
    inside = tuple(set(subset) <= members for subset in FOCAL_SETS)
    overlapping = tuple(bool(set(subset) & members) for subset in FOCAL_SETS)
    return inside, overlapping
