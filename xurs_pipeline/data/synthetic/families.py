"""Fictional condition families: four invented conditions, two symptoms, two invented tests, and rules.

Every family states the same kind of fictional diagnostic rules (wording fixed across V1 and V2)::

    Rules: C0 and C1 both cause S0. C2 and C3 both cause S1.
    A positive X test points to C0 or C2. A positive Y test points to C1 or C3.

A case presenting symptom S_g makes the pair (C_2g, C_2g+1) plausible; a positive X (resp. Y) test
singles out the first (resp. second) member. So condition ``c`` belongs to symptom group ``c // 2`` and
is indicated by test ``c % 2``. Names are pronounceable inventions drawn with a seeded generator,
unique across the whole dataset, so no name can leak between families or splits.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

INSTRUCTION = (
    "The conditions and tests below are fictional. Use only the stated rules to choose the condition "
    "that best explains the case."
)
SYMPTOMS = (
    "fever",
    "joint pain",
    "night sweats",
    "blurred vision",
    "headaches",
    "dizziness",
    "hair loss",
    "chest tightness",
    "muscle cramps",
    "itchy skin",
    "hoarseness",
    "swollen ankles",
    "ringing ears",
    "dry mouth",
    "hiccups",
    "numb fingers",
)
CONDITION_KINDS = ("syndrome", "disease", "palsy", "sickness")
STATUS_POSITIVE, STATUS_PENDING = "positive", "pending"
STATUS_WORDS = ("positive", "negative", "pending")
_ONSETS = (
    "b",
    "br",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "k",
    "kl",
    "l",
    "m",
    "n",
    "p",
    "pr",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "z",
)
_VOWELS = ("a", "e", "i", "o", "u")
_CODAS = ("l", "n", "r", "s", "x", "m", "th")


@dataclass(frozen=True)
class Family:
    """One condition family: ``conditions`` C0..C3, ``symptoms`` S0, S1, ``tests`` X, Y."""

    name: str
    conditions: tuple[str, str, str, str]
    symptoms: tuple[str, str]
    tests: tuple[str, str]

    def rules_text(self) -> str:
        c, s, t = self.conditions, self.symptoms, self.tests
        return (
            f"Rules: {c[0]} and {c[1]} both cause {s[0]}. {c[2]} and {c[3]} both cause {s[1]}. "
            f"A positive {t[0]} test points to {c[0]} or {c[2]}. "
            f"A positive {t[1]} test points to {c[1]} or {c[3]}."
        )


class NameSource:
    """Seeded supply of unique invented words (capitalised, 2-3 syllables)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self) -> str:
        while True:
            syllables = self.rng.choice((2, 2, 3))
            body = "".join(self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables))
            word = string.capwords(body + self.rng.choice(_CODAS))
            if word not in self.used:
                self.used.add(word)
                return word


def make_families(n: int, rng: random.Random) -> list[Family]:
    """``n`` families named ``family000``...; deterministic given the state of ``rng``."""
    names = NameSource(rng)
    families = []
    for index in range(n):
        kinds = [rng.choice(CONDITION_KINDS) for _ in range(4)]
        conditions = tuple(f"{names.word()} {kind}" for kind in kinds)
        symptoms = tuple(rng.sample(SYMPTOMS, 2))
        tests = (names.word(), names.word())
        families.append(Family(f"family{index:03d}", conditions, symptoms, tests))  # type: ignore[arg-type]
    return families


def split_families(
    families: list[Family], counts: tuple[int, int, int], rng: random.Random
) -> dict[str, list[Family]]:
    """Shuffle families (seeded) and deal ``counts`` = (train, dev, test) of them: each in one split only."""
    order = list(families)
    rng.shuffle(order)
    n_train, n_dev, _ = counts
    return {
        "train": sorted(order[:n_train], key=lambda f: f.name),
        "dev": sorted(order[n_train : n_train + n_dev], key=lambda f: f.name),
        "test": sorted(order[n_train + n_dev :], key=lambda f: f.name),
    }
