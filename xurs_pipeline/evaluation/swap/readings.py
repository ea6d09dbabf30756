"""One reading per (method, run, probe): how each method credits the two cues, from which every study,
headline and card of the swap control is derived (``measures.py``, ``agreement.py``).

Every method explains the same function, the label's width ``W_c`` (Eq. 2) of the probe, on the same model
and probe, through the one call of the attribution interface (``attribution/methods/``: ``attribute`` on a
:class:`~xurs_pipeline.attribution.methods.Problem` whose spans are cue 1, cue 2 and the rest and whose
references are the entry's reference set, ``attribution/variants.py``: the first prepared training reference
unless the entry names another set; the method averages over the set, App. B.2; ``paper@references=...``
reruns the experiment's estimator on it, ``estimator_readings.py``). Besides them:

- ``paper``: the ``attribute`` stages' runs (``attribution.method``, the paper's estimator by default), read
  from their rows, under every run (``roles.RUNS``: the trained and the randomised models);
- ``input_only``: embedding distance to the references, no model (``nulls.input_only_scores``), a null;
- ``random``: uniform random token scores, seeded, a null.

A reading (:class:`CueReading`) holds per cue the best token's magnitude (which cue the method ranks first)
and the cue's total magnitude (its share); a span method credits a cue as a whole, so both are the cue
span's magnitude. ``evals``: the model evaluations it took per probe, ``forwards`` + ``grad_evals`` (the
paper's rows count their gradient evaluations only).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.masked import classifier_mass_fn
from xurs_pipeline.attribution.methods import Problem, TokenScores, method_for
from xurs_pipeline.attribution.variants import (
    FIRST_TRAINING,
    RUN_METHOD,
    ReferenceSet,
    SwapVariant,
    reduction_twins,
    swap_variant,
    variant_name,
)
from xurs_pipeline.evaluation.swap.estimator_readings import estimator_config
from xurs_pipeline.evaluation.swap.roles import RUNS

NULL_METHODS = ("input_only", "random")
COSTS = ("evals", "forwards", "grad_evals")  # per probe: all model evaluations, forwards, gradients
COLUMNS = (
    "method",
    "run",
    "role",
    "record_id",
    "top",
    "share_1",
    "best_1",
    "best_2",
    "total_1",
    "total_2",
    *COSTS,
)


@dataclass(frozen=True)
class CueReading:
    """How a method credits the two cues on one probe: ``best`` (2,) the largest token magnitude in each cue,
    ``total`` (2,) each cue's summed magnitude, ``evals`` the model evaluations it took, ``grad_evals`` of
    them with gradients (the rest forwards)."""

    best: tuple[float, float]
    total: tuple[float, float]
    evals: int = 0
    grad_evals: int = 0

    @property
    def top(self) -> int:
        """The cue ranked first (1 or 2), 0 on a tie (a method that moves neither cue ranks none)."""
        return 1 if self.best[0] > self.best[1] else 2 if self.best[1] > self.best[0] else 0

    @property
    def share_1(self) -> float:
        """Cue 1's share of the two cues' magnitude (NaN when both are 0)."""
        both = self.total[0] + self.total[1]
        return self.total[0] / both if both > 0 else float("nan")

    def row(self, method: str, run: str, record_id: str) -> dict[str, Any]:
        """The reading as a row of :data:`COLUMNS`."""
        return {
            "method": method,
            "run": run,
            "role": RUNS[run].role.name,
            "record_id": record_id,
            "top": self.top,
            "share_1": self.share_1,
            "best_1": self.best[0],
            "best_2": self.best[1],
            "total_1": self.total[0],
            "total_2": self.total[1],
            "evals": self.evals,
            "forwards": self.evals - self.grad_evals,
            "grad_evals": self.grad_evals,
        }


def token_reading(
    magnitude: Sequence[float], cues: Sequence[Sequence[int]], evals: int = 0, grad_evals: int = 0
) -> CueReading:
    """A token ranking's reading: magnitude (seq,) and the two cues' positions (disjoint, within the
    tokens)."""
    a = np.abs(np.asarray(magnitude, dtype=np.float64))
    if len(cues) != 2:
        raise ValueError(f"two cues expected, got {len(cues)}")
    for k, cue in enumerate(cues):
        if not len(cue) or min(cue) < 0 or max(cue) >= a.size:
            raise ValueError(
                f"cue {k + 1} positions {list(cue)} must be non-empty and within the {a.size} tokens"
            )
    if set(cues[0]) & set(cues[1]):
        raise ValueError(f"the cues share positions {sorted(set(cues[0]) & set(cues[1]))}")
    best = tuple(float(a[list(c)].max()) for c in cues)
    total = tuple(float(a[list(c)].sum()) for c in cues)
    return CueReading(best, total, evals, grad_evals)  # type: ignore[arg-type]


def scores_reading(scores: TokenScores, cues: Sequence[Sequence[int]]) -> CueReading:
    """A method's scores read on the two cues: a span method's cue spans (the first two), or its tokens."""
    evals = scores.forwards + scores.grad_evals
    if scores.span_values is None:
        return token_reading(scores.magnitude, cues, evals, scores.grad_evals)
    span = (abs(scores.span_values[0]), abs(scores.span_values[1]))
    return CueReading(span, span, evals, scores.grad_evals)


def cue_spans(seq: int, cues: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """The span methods' players: cue 1's positions, cue 2's and every other position."""
    rest = sorted(set(range(seq)) - {int(p) for c in cues for p in c})
    return (*(tuple(map(int, c)) for c in cues), tuple(rest))


@dataclass(frozen=True)
class ProbeSet:
    """The probes as prepared: record id -> token ids (seq,), cue positions (two lists), label, prepared
    training references (n_refs, seq), the input-only magnitudes (seq,); each run's attribution rows
    (``attributions`` schema, indexed by record id); each reference set the entries name (set name ->
    record id -> (n, seq) token ids or None for the zero embeddings, ``probe_references.py``)."""

    ids: Mapping[str, list[int]]
    cues: Mapping[str, tuple[list[int], list[int]]]
    labels: Mapping[str, int]
    references: Mapping[str, np.ndarray]
    input_only: Mapping[str, np.ndarray]
    runs: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    reference_sets: Mapping[str, Mapping[str, np.ndarray | None]] = field(default_factory=dict)

    def reference_ids(self, chosen: ReferenceSet, record_id: str) -> np.ndarray | None:
        """The probe's references of ``chosen``: (n, seq) token ids, or None for the zero embeddings; the
        first training reference is the first prepared one unless built as a set."""
        if chosen == FIRST_TRAINING and chosen.name not in self.reference_sets:
            return self.references[record_id][:1]
        return self.reference_sets[chosen.name][record_id]


def fixed_readings(probes: ProbeSet, seed: int) -> pd.DataFrame:
    """The readings no model is run for: ``paper`` under every run (its rows' magnitudes and gradient
    evaluations), ``input_only`` and ``random`` under the trained runs."""
    rows = []
    for name, frame in probes.runs.items():
        for rid, row in frame.iterrows():
            evals = int(row["grad_evals"])
            reading = token_reading(row["token_magnitude"], probes.cues[rid], evals, evals)
            rows.append(reading.row(RUN_METHOD, name, str(rid)))
    for name in (n for n in probes.runs if not RUNS[n].randomised):
        for rid, cues in probes.cues.items():
            rng = np.random.default_rng(seed + zlib.crc32(rid.encode()))  # the random null: seeded per probe
            rows.append(token_reading(probes.input_only[rid], cues).row("input_only", name, rid))
            rows.append(token_reading(rng.random(len(probes.ids[rid])), cues).row("random", name, rid))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def method_configs(
    entries: Sequence[str], layer_ig_steps: int, estimator: AttributionConfig | None = None
) -> dict[str, SwapVariant]:
    """Each compared method's config and reference set, by its ``evaluation.swap_methods`` entry (a token
    method's name or variant, or ``paper@references=...`` rerunning ``estimator``, the experiment's
    ``attribution`` config, on the set as one collection, ``estimator_readings.estimator_config``;
    ``variants.swap_variant``; ``evaluation.swap_layer_ig_steps`` for layer_ig unless the entry sets it)."""
    variants = {e: swap_variant(e, estimator, layer_ig_steps=layer_ig_steps) for e in entries}
    return {
        e: replace(v, config=estimator_config(v.config, v.references)) if variant_name(e) == RUN_METHOD else v
        for e, v in variants.items()
    }


def model_readings(
    classifier: Any, run: str, probes: ProbeSet, methods: Mapping[str, SwapVariant]
) -> pd.DataFrame:
    """Each compared method's reading of every probe under one trained model (run ``run``), its rows named
    by the entry (``methods``: entry -> variant, :func:`method_configs`): the method's one call
    (``attribute``) on the probe's label width from the entry's reference set, the cues' positions the
    positions read (``Problem.read``: a per-token method scores only those). Entries that differ only in
    ``reduction`` (``variants.reduction_twins``) share one computation, each reading it with its own
    reduction; each row carries the computation's cost, what the entry costs alone."""
    classifier.eval()
    embed = classifier.backbone.get_input_embeddings()
    chosen = {entry: method_for(v.config) for entry, v in methods.items()}
    masses = classifier_mass_fn(classifier)
    rows = []
    twins = reduction_twins(list(methods.values()))
    for rid in tqdm(probes.ids, desc=f"swap methods, model {run}", unit="probe"):
        with torch.no_grad():
            x = embed(torch.tensor([probes.ids[rid]], device=embed.weight.device)).detach()
        cues = probes.cues[rid]
        read = tuple(sorted(p for cue in cues for p in cue))  # a per-token method pays for the cues only
        probe = Problem(masses, x, probes.labels[rid], spans=cue_spans(x.shape[1], cues), read=read)
        computed: dict[str, TokenScores] = {}
        for entry, method in chosen.items():
            if twins[entry] in computed:  # a reduction twin: its cost is the computation's, paid once
                scores = method.reduced(computed[twins[entry]])
            else:
                references = reference_embeds(embed, probes.reference_ids(methods[entry].references, rid), x)
                problem = replace(probe, references=references, layer=method.layer(classifier))
                scores = computed[entry] = method.attribute(problem)
            rows.append(scores_reading(scores, cues).row(entry, run, rid))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def reference_embeds(embed: Any, ids: np.ndarray | None, x: torch.Tensor) -> torch.Tensor:
    """A probe's references as embeddings (n, seq, d) in ``x``'s dtype: ``ids`` (n, seq) embedded, or
    one zero reference (``ids`` None)."""
    if ids is None:
        return torch.zeros_like(x)
    with torch.no_grad():
        return embed(torch.as_tensor(ids, device=x.device)).detach().to(x.dtype)
