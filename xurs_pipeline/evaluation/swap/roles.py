"""The swap study's vocabulary, declared once: the three models (roles), the runs that explain the probes,
and when the study has nothing to do.

- Model A learned cue 1: the pipeline's own ``train`` stage on the two-cue data (labels follow cue 1).
- Model B learned cue 2: ``train_swap``, the same run on the prompts relabelled by cue 2.
- Model C chose its cue: ``train_swap``, the same run on the training texts whose two cues name the same
  label (``keep_agreeing``), so its labels decide no cue (``cue`` 0) and which cue it reads is its own
  choice: the probes where it reads cue 1 or cue 2 are where the label-only rankers fail, both ways.

Each role's randomised run re-initialises its head with seed ``evaluation.seed + seed_offset`` (three
different random functions); the runs are the trained and the randomised model of each role.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xurs_pipeline.data.config import SWAP_SOURCE


@dataclass(frozen=True)
class Role:
    """One swap model: its name, the cue (1 or 2) its labels followed (0: both, on the texts where they
    agree), its randomised run's seed offset and the artifact (``contracts.py``) holding its classifier:
    ``classifier`` or, under ``<name>/``, ``swap_model``'s."""

    name: str
    cue: int
    seed_offset: int
    artifact: str

    def classifier_dir(self, paths: Any) -> Path:
        from xurs_pipeline.contracts import artifact

        where = artifact(self.artifact).at(paths)
        return where if self.artifact == "classifier" else where / self.name / "classifier"

    @property
    def labels(self) -> str:
        """What its training labels followed (``cue1``, ``cue2``, ``agreeing cues``): its training run's
        variant, which keys its cached training state apart."""
        return f"cue{self.cue}" if self.cue else "agreeing cues"

    def relabel(self, prompts: Any) -> Any:
        """The prepared two-cue prompts (a frame) as this model is trained on them
        (``data/synthetic/swap.py``, imported here: the report reads the roles and stays light)."""
        from xurs_pipeline.data.synthetic.swap import keep_agreeing, relabel_by_cue

        return relabel_by_cue(prompts, self.cue) if self.cue else keep_agreeing(prompts)


ROLES = {
    "A": Role("A", 1, 0, "classifier"),
    "B": Role("B", 2, 1, "swap_model"),
    "C": Role("C", 0, 2, "swap_model"),
}
TRAINING_CUE = {name: role.cue for name, role in ROLES.items()}  # role -> its labels' cue (0: both)
CUE_ROLES = [name for name, role in ROLES.items() if role.cue]  # A, B: the models whose labels name a cue
FIRST_ROLE = next(iter(ROLES))  # model A: the attribute stage's run, the prompts' tokenizer
SWAP_ROLES = [name for name, role in ROLES.items() if role.artifact == "swap_model"]  # B, C: train_swap's


@dataclass(frozen=True)
class SwapRun:
    """One attribution run of the probes: ``name`` (its directory), its role and whether its head (and
    ``evaluation.swap_randomise``'s blocks) were re-initialised."""

    name: str
    role: Role
    randomised: bool

    @property
    def ranking(self) -> str:
        return "randomised" if self.randomised else "trained"


# by name, trained runs first: A (the attribute stage's), B, C, then A_random, B_random, C_random
RUNS = {
    run.name: run
    for run in (
        SwapRun(f"{role.name}{'_random' * randomised}", role, randomised)
        for randomised in (False, True)
        for role in ROLES.values()
    )
}


def study_runs(swap_randomise: str) -> dict[str, SwapRun]:
    """The runs a study explains under ``evaluation.swap_randomise``: every run, or the trained ones when it
    is ``none``."""
    return {name: run for name, run in RUNS.items() if swap_randomise != "none" or not run.randomised}


def skipped_reason(source: str) -> str | None:
    """Why the swap stages have nothing to do on ``data.source`` (None on the two-cue data)."""
    if source == SWAP_SOURCE:
        return None
    return f"data.source={source!r}: the swap control needs the two-cue data (experiment=controlled_swap)"
