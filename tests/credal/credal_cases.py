"""Independent reference computations and input builders for the credal tests (plain loops, float64).

Nothing here imports the vectorised code it is compared against, except ``FOCAL_SETS`` (the order).
"""

from __future__ import annotations

import torch

from xurs_pipeline.credal import FOCAL_SETS

PROPER_SETS = FOCAL_SETS[:14]


def bel_of_masses(masses: list[float], event: tuple[int, ...]) -> float:
    """Bel(E) = Σ_{S⊆E} m(S) by a loop over the 15 focal sets (Eq. 1)."""
    return sum(m for subset, m in zip(FOCAL_SETS, masses, strict=True) if set(subset) <= set(event))


def pl_of_masses(masses: list[float], event: tuple[int, ...]) -> float:
    """Pl(E) = Σ_{S∩E≠∅} m(S) by a loop over the 15 focal sets (Eq. 1)."""
    return sum(m for subset, m in zip(FOCAL_SETS, masses, strict=True) if set(subset) & set(event))


def beliefs_of_masses(masses: torch.Tensor) -> torch.Tensor:
    """(..., 15) masses -> (..., 14) beliefs Bel(S) of every proper subset, by loops."""
    flat = masses.reshape(-1, 15).tolist()
    rows = [[bel_of_masses(row, subset) for subset in PROPER_SETS] for row in flat]
    return torch.tensor(rows, dtype=masses.dtype).reshape(*masses.shape[:-1], 14)


def loop_recursion(beliefs: list[float], positive_part: bool = True) -> list[float]:
    """App. A recursion, one set at a time in FOCAL_SETS order, by explicit subset tests."""
    values: list[float] = []
    for i, subset in enumerate(PROPER_SETS):
        total = 0.0
        for j in range(i):
            if set(PROPER_SETS[j]) < set(subset):
                total += max(values[j], 0.0) if positive_part else values[j]
        values.append(beliefs[i] - total)
    return values


def loop_correction(intermediate: list[float]) -> list[float]:
    """Eq. 5 with Python floats: clip, fill the shortfall into Θ, normalise."""
    q = [max(v, 0.0) for v in intermediate]
    s = sum(q)
    r = max(1.0 - s, 0.0)
    return [v / (s + r) for v in q] + [r / (s + r)]


def beliefs_for_targets(targets: dict[tuple[int, ...], float]) -> torch.Tensor:
    """Beliefs (14,) whose positive-part recursion yields intermediate value ``targets[S]`` (else ≤ 0).

    b_S = Σ_{T⊆S} q_T; where that exceeds 1 the set's own target must be 0, and b_S = 1 then gives a
    negative intermediate value (which the correction removes), keeping every belief in [0, 1].
    """
    q = [targets.get(subset, 0.0) for subset in PROPER_SETS]
    beliefs = []
    for subset, own in zip(PROPER_SETS, q, strict=True):
        total = sum(v for other, v in zip(PROPER_SETS, q, strict=True) if set(other) <= set(subset))
        if total > 1:
            assert own == 0, f"target for {subset} makes its belief exceed 1"
            total = 1.0
        beliefs.append(total)
    return torch.tensor(beliefs, dtype=torch.float64)


def random_masses(n: int, generator: torch.Generator) -> torch.Tensor:
    """(n, 15) float64 mass vectors, uniform on the simplex (normalised exponentials)."""
    draws = torch.empty(n, 15, dtype=torch.float64).exponential_(generator=generator)
    return draws / draws.sum(-1, keepdim=True)


def mixed_beliefs(n: int, generator: torch.Generator) -> torch.Tensor:
    """(n, 14) float64 beliefs covering both regimes s < 1 and s > 1 and some negative m~.

    Beliefs of random mass vectors, scaled by a factor in [0.3, 1.7] and perturbed, then clipped to [0, 1].
    """
    masses = random_masses(n, generator)
    scale = 0.3 + 1.4 * torch.rand(n, 1, generator=generator, dtype=torch.float64)
    noise = 0.05 * torch.randn(n, 14, generator=generator, dtype=torch.float64)
    return (beliefs_of_masses(masses) * scale + noise).clamp(0.0, 1.0)
