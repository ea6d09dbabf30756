"""Prescribed answer-set probabilities of the synthetic questions (Sec. 5.4, App. D.2).

Masses are given for all 15 non-empty answer sets in ``credal.FOCAL_SETS`` order, over option indices
as arranged in the prompt. With plausible pair {p, q} (the two conditions causing the case's symptom):

- the text distinguishes them (a positive test singles out ``i``): m({i}) = 0.9, m({p, q}) = 0.1;
- it does not, V2 and V1 without flaws: m({p}) = m({q}) = 0.1, m({p, q}) = 0.8 (equal singletons);
- it does not, V1 as published (flawed): m({label}) = 0.15, m({other}) = 0.05, m({p, q}) = 0.8,
  favouring the labelled answer without support in the text (App. D.1).

All other sets get 0. The width of the labelled answer (Eq. 2) is 0.1 with the result and 0.8 without.
"""

from __future__ import annotations

from xurs_pipeline.credal import FOCAL_INDEX, N_MASSES

RESOLVED_SINGLETON = 0.9
RESOLVED_PAIR = 0.1
UNRESOLVED_SINGLETON = 0.1
UNRESOLVED_PAIR = 0.8
FLAWED_LABEL_SINGLETON = 0.15
FLAWED_OTHER_SINGLETON = 0.05


def prescribed_masses(
    plausible: tuple[int, int], indicated: int | None, label: int, favour_label: bool = False
) -> tuple[float, ...]:
    """(15,) masses for plausible option pair, the option a result singles out (or None), and the label."""
    p, q = sorted(plausible)
    if p == q or label not in (p, q) or (indicated is not None and indicated not in (p, q)):
        raise ValueError(
            f"prescribed_masses: plausible={plausible}, indicated={indicated}, label={label} inconsistent"
        )
    masses = [0.0] * N_MASSES
    pair = FOCAL_INDEX[(p, q)]
    if indicated is not None:
        masses[FOCAL_INDEX[(indicated,)]] = RESOLVED_SINGLETON
        masses[pair] = RESOLVED_PAIR
    elif favour_label:
        other = q if label == p else p
        masses[FOCAL_INDEX[(label,)]] = FLAWED_LABEL_SINGLETON
        masses[FOCAL_INDEX[(other,)]] = FLAWED_OTHER_SINGLETON
        masses[pair] = UNRESOLVED_PAIR
    else:
        masses[FOCAL_INDEX[(p,)]] = masses[FOCAL_INDEX[(q,)]] = UNRESOLVED_SINGLETON
        masses[pair] = UNRESOLVED_PAIR
    return tuple(masses)
