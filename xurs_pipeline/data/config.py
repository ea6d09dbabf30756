"""Config schema of the ``data`` section (the ``prepare`` stage)."""

from __future__ import annotations

from dataclasses import dataclass, field

SOURCES = ("medqa", "synthetic_v1", "synthetic_v2", "synthetic_direct", "synthetic_swap")  # data.source
SWAP_SOURCE = "synthetic_swap"  # the two-cue data, the one source the swap control runs on
CARVE_CHOICES = ("", "dev", "train")  # data.medqa_carve
SWAP_ORDERS = ("fixed", "counterbalanced")  # data.swap_order (data/synthetic/swap.py reads it)


@dataclass
class DataConfig:
    """What to prepare and how.

    source: ``synthetic_v1`` | ``synthetic_v2`` | ``synthetic_direct`` (the result names the condition:
      the positive control, ``data/synthetic/direct.py``) | ``synthetic_swap`` (two cues of the same form,
      the label following cue 1 or, relabelled, cue 2: the swap control, ``data/synthetic/swap.py``) |
      ``medqa``.
    max_tokens: prompt budget in tokens, special tokens included (Sec. 5.1: 512); only the question is cut.
    seed: seeds the synthetic generators and the MedQA train/dev carve.
    medqa_path: directory holding ``medqa_files`` (``{split}`` = train/dev/test), relative to the
      project root (default ``data/medqa``, inside the project and git-ignored: put your copy there).
    medqa_hub: Hugging Face dataset id; when set, MedQA is read from the hub instead (needs ``datasets``).
    medqa_carve: ``dev`` carves train out of the dev file (the local copy has no train split), ``train``
      carves dev out of train; ``""`` uses the splits as found. ``medqa_train_fraction`` goes to train.
    families: condition families per split (train, dev, test); cases_per_family: cases in each family.
      V1 full size: [80, 20, 20] x 4 cases (960 records); V2: [80, 20, 20] x 6 (7,680/3,840/3,840).
    v1_flaws: V1 keeps its known flaws (answer-order shortcut, unequal singleton targets; App. D.1).
    require_paired_lengths: fail when a result pair does not tokenise position by position alike (V2).
    pair_every: ``synthetic_direct`` only: every k-th case of a family also has its result-free partner
      (1 = every case, as V1 and V2 always have).
    cue2_first: ``synthetic_swap`` only: state cue 2 (the urine test) before cue 1 (the blood test); the
      cues' roles are unchanged, so model B's cue becomes the first sentence (the sentence-order control).
    swap_order: ``synthetic_swap`` only: ``fixed`` (every question in one order, ``cue2_first``'s) or
      ``counterbalanced`` (cue 2 first in every other case, alternating by family and case: half of each
      split's texts and of its probes; ``data/synthetic/swap.py``), so a score can be read per order.
    """

    source: str = "synthetic_v1"
    max_tokens: int = 512
    seed: int = 0
    medqa_path: str = "data/medqa"
    medqa_files: str = "US/4_options/phrases_no_exclude_{split}.jsonl"
    medqa_hub: str = ""
    medqa_carve: str = ""
    medqa_train_fraction: float = 0.8
    families: list[int] = field(default_factory=lambda: [80, 20, 20])
    cases_per_family: int = 4
    v1_flaws: bool = True
    require_paired_lengths: bool = False
    pair_every: int = 1
    cue2_first: bool = False
    swap_order: str = "fixed"

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"data.source={self.source!r}: must be one of {SOURCES}")
        if self.max_tokens < 16:
            raise ValueError(f"data.max_tokens={self.max_tokens}: must be positive and at least 16")
        if "{split}" not in self.medqa_files:
            raise ValueError(f"data.medqa_files={self.medqa_files!r}: must contain '{{split}}'")
        if self.medqa_carve not in CARVE_CHOICES:
            raise ValueError(f"data.medqa_carve={self.medqa_carve!r}: must be one of {CARVE_CHOICES}")
        if not 0.0 < self.medqa_train_fraction < 1.0:
            raise ValueError(f"data.medqa_train_fraction={self.medqa_train_fraction}: must be in (0, 1)")
        if len(self.families) != 3 or min(self.families) < 1:
            raise ValueError(
                f"data.families={list(self.families)}: must be three counts >= 1 (train, dev, test families)"
            )
        if self.pair_every < 1:
            raise ValueError(f"data.pair_every={self.pair_every}: must be >= 1")
        if self.pair_every != 1 and self.source != "synthetic_direct":
            raise ValueError(
                f"data.pair_every={self.pair_every}: only data.source=synthetic_direct has cases without a "
                f"partner; {self.source} pairs every case (set 1)"
            )
        if self.cue2_first and self.source != "synthetic_swap":
            raise ValueError(
                f"data.cue2_first=true: only data.source=synthetic_swap has two cues; {self.source} has not"
            )
        if self.swap_order not in SWAP_ORDERS:
            raise ValueError(f"data.swap_order={self.swap_order!r}: must be one of {SWAP_ORDERS}")
        if self.swap_order != "fixed" and self.source != "synthetic_swap":
            raise ValueError(
                f"data.swap_order={self.swap_order!r}: only data.source=synthetic_swap has two cues to order"
            )
        if self.cue2_first and self.swap_order != "fixed":
            raise ValueError(
                "data.cue2_first=true with data.swap_order=counterbalanced: counterbalancing already states "
                "cue 2 first in half the questions (set one)"
            )
        if self.cases_per_family < 1:
            raise ValueError(f"data.cases_per_family={self.cases_per_family}: must be >= 1")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"data.seed={self.seed}: must be in [0, 2**32 - 1]")
