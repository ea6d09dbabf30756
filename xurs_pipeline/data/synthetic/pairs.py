"""Paired-tokenisation check (App. D.2): do the prompts with and without the result line up as they are?

For every ``pair_id`` (one record with the distinguishing result, one without) the check compares the
two token sequences position by position, without deleting, duplicating or aligning tokens. A pair
passes when both have the same length (hence the same all-ones attention mask, as neither is padded)
and the same token at every position outside the clue positions of either record. V2 is built to
pass; V1 adds a whole sentence, so its pairs differ in length by design (the paper aligns them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class PairReport:
    n_pairs: int
    n_same_length: int
    n_identical_outside_clue: int
    failures: tuple[tuple[str, str], ...]  # (pair_id, reason)

    def as_dict(self) -> dict[str, object]:
        return {
            "n_pairs": self.n_pairs,
            "n_same_length": self.n_same_length,
            "n_identical_outside_clue": self.n_identical_outside_clue,
            "n_failed": len(self.failures),
            "failures": [list(f) for f in self.failures[:20]],
        }


def check_pairs(frame: pd.DataFrame) -> PairReport:
    """Check every result pair of a prepared synthetic frame.

    Uses the columns pair_id, has_result, input_ids and clue_positions.
    """
    members: dict[str, list[int]] = {}
    for row, pair_id in enumerate(frame["pair_id"].tolist()):
        members.setdefault(str(pair_id), []).append(row)
    has_result = frame["has_result"].tolist()
    input_ids = frame["input_ids"].tolist()
    clue_positions = frame["clue_positions"].tolist()
    n_pairs = same_length = identical = 0
    failures: list[tuple[str, str]] = []
    for pair_id in sorted(members):
        rows = members[pair_id]
        flags = sorted(bool(has_result[r]) for r in rows)
        if flags != [False, True]:
            failures.append((pair_id, f"expected one record with and one without the result, found {flags}"))
            continue
        n_pairs += 1
        with_result, without = sorted(rows, key=lambda r: not has_result[r])
        a, b = np.asarray(input_ids[with_result]), np.asarray(input_ids[without])
        if len(a) != len(b):
            failures.append((pair_id, f"lengths differ: {len(a)} tokens with the result, {len(b)} without"))
            continue
        same_length += 1
        clue = np.zeros(len(a), dtype=bool)
        clue[[*clue_positions[with_result], *clue_positions[without]]] = True
        differ = np.flatnonzero((a != b) & ~clue)
        if differ.size:
            failures.append((pair_id, f"tokens differ outside the clue at positions {differ[:10].tolist()}"))
            continue
        identical += 1
    return PairReport(n_pairs, same_length, identical, tuple(failures))
