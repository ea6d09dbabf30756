"""Section-level summaries of token magnitudes (App. B.3).

Magnitudes are summed within the question, each of the four options and the ``Answer:`` prefix, and
each sum is divided by the total magnitude of these six text sections (App. B.3's "share of total
magnitude" is over the sections compared), so the six shares add to one; template and option-label
tokens are in no section and change no share. The highest-attributed option is the option
whose text has the largest share, not necessarily the predicted answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xurs_pipeline.evaluation.agreement import spearman

SHARE_SECTIONS: tuple[str, ...] = (
    "question",
    "option_A",
    "option_B",
    "option_C",
    "option_D",
    "answer_prefix",
)
OPTION_SLICE = slice(1, 5)


def section_shares(magnitude: np.ndarray, sections: Sequence[str], record_id: str = "?") -> np.ndarray:
    """Shares of the six text sections' total magnitude per :data:`SHARE_SECTIONS`, (6,), summing to 1.

    magnitude (seq,), sections (seq,); positions of other sections (template, labels) are left out of
    numerator and denominator alike."""
    mag = np.asarray(magnitude, dtype=np.float64)
    if mag.shape != (len(sections),):
        raise ValueError(
            f"record {record_id!r}: {mag.shape} token magnitudes but {len(sections)} section labels"
        )
    labels = np.asarray(sections)
    sums = np.array([mag[labels == name].sum() for name in SHARE_SECTIONS])
    total = sums.sum()
    if not np.isfinite(total) or total <= 0:
        raise ValueError(
            f"record {record_id!r}: total token magnitude of the text sections {SHARE_SECTIONS} is {total}; "
            "shares need a positive total"
        )
    return sums / total


def top_option(shares: np.ndarray) -> int:
    """Index 0..3 of the option with the largest share (ties: first option)."""
    return int(np.argmax(np.asarray(shares)[OPTION_SLICE]))


def compare_sections(shares_a: np.ndarray, shares_b: np.ndarray) -> dict[str, float]:
    """Spearman of the section ranking, agreement on the top option (0/1), mean absolute share difference."""
    a, b = np.asarray(shares_a, dtype=np.float64), np.asarray(shares_b, dtype=np.float64)
    return {
        "section_spearman": spearman(a, b),
        "top_option_agree": float(top_option(a) == top_option(b)),
        "share_difference": float(np.mean(np.abs(a - b))),
    }
