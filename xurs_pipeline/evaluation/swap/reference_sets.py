"""The swap study's reference sets, the same for every method that reads a reference (issue 53, item 3:
methods on equal terms), and the entries of ``evaluation.swap_methods`` that name one.

An entry names its set with the swap study's key ``references``, beside the method's own keys
(``attribution/variants.py``): ``layer_ig@references=train:8``, ``occlusion_token@references=marginal:16``.
Each set holds one or more references B_j (token ids fitted to the probe's L positions, or the zero
embeddings), built per probe by ``probe_references.py``:

- ``zero``: the zero embeddings (the zero baseline, Eq. 8's replacement);
- ``pad``: the pad token's embedding row at every position (a pad baseline);
- ``train:k``: the first k training prompts, ordered and fitted to the probe as the paper's estimator fits
  its references (``attribution.reference_order``, ``attribution.reference_alignment``; the paper's run
  reads ``train:<attribution.refs_per_collection>``);
- ``counterfactual``: the probe with both cues resolved to its label (each cue names only P), prepared as
  ``prepare`` prepares it and aligned to the probe by token sequence (Sec. 5.4): the text both share sits
  in place, so only the cues' tokens differ;
- ``marginal:K``: K training prompts drawn at random with replacement (seeded by ``evaluation.seed`` and the
  probe), fitted by position (Sec. 3.3): at each position K tokens drawn from the training texts at that
  position, Kim et al. 2020's marginalisation with the training texts as the distribution.

A method reads every reference of its set and averages (App. B.2: references averaged before magnitudes,
``readings.averaged``): ``layer_ig`` integrates from each B_j, ``sequential_ig`` takes its baseline rows
from each, occlusion and Shapley replace rows by each (``attribution.replacement='reference'``), so
``occlusion_token`` under ``marginal:K`` scores ``F(X) - mean_j F(X with row i = B_j,i)``. The gradients
at the input (``grad_l2``, ``grad_x_input``) read no reference and refuse the key. ``paper`` is read from
the attribute runs (its references: ``attribution.reference`` and ``refs_per_collection``);
``paper@references=R`` (and ``reduction``) reruns the experiment's estimator on the probes from every
reference of R, as one collection (``estimator_readings.py``). An entry without the key reads the first
training reference (``train:1``), as ``layer_ig`` and ``replacement=reference`` always have. No torch here:
entries are validated with the config.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xurs_pipeline.attribution.config import METHOD_KEYS, AttributionConfig
from xurs_pipeline.attribution.variants import variant_config
from xurs_pipeline.evaluation.swap.roles import RUN_METHOD

KINDS = ("zero", "pad", "counterfactual", "train", "marginal")
COUNTED = ("train", "marginal")  # kinds written kind:count
KEY = "references"
# the methods that read a reference, and of them those whose replaced or baseline rows come from it
READS_REFERENCES = (RUN_METHOD, "layer_ig", *METHOD_KEYS["replacement"])
REPLACING = METHOD_KEYS["replacement"]


@dataclass(frozen=True)
class ReferenceSet:
    """One reference set: its kind (``KINDS``) and how many references it holds (``train``, ``marginal``;
    1 for the others)."""

    kind: str
    count: int = 1

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.count}" if self.kind in COUNTED else self.kind


FIRST_TRAINING = ReferenceSet("train", 1)  # what an entry without ``references`` reads


def reference_set(text: str) -> ReferenceSet:
    """``zero``, ``pad``, ``counterfactual``, ``train:<k>`` or ``marginal:<K>`` (k, K >= 1); ValueError in
    one line otherwise."""
    kind, colon, count = text.partition(":")
    if kind in COUNTED and count.isdigit() and int(count) >= 1:
        return ReferenceSet(kind, int(count))
    if kind in KINDS and kind not in COUNTED and not colon:
        return ReferenceSet(kind)
    raise ValueError(
        f"{KEY}={text!r}: must be zero, pad, counterfactual, train:<k> or marginal:<K> (k, K >= 1)"
    )


@dataclass(frozen=True)
class SwapVariant:
    """One entry of ``evaluation.swap_methods`` run through ``attribution/methods/``: its method's config
    and its reference set."""

    entry: str
    config: AttributionConfig
    references: ReferenceSet = FIRST_TRAINING


def swap_variant(entry: str, estimator: AttributionConfig | None = None, **defaults: object) -> SwapVariant:
    """The entry's config (``variants.variant_config``, ``defaults`` as there) and reference set; a bad
    ``references`` value, a method that reads none, or ``replacement`` beside it raise ValueError in one
    line naming the entry. ``paper@references=R[,reduction=r]`` reruns the experiment's estimator
    (``estimator``: its ``attribution`` config; without it, as when the config is checked, a stand-in that
    checks the keys alone) from the set R (``estimator_readings.py``)."""
    name, _, spec = entry.partition("@")
    items = spec.split(",") if spec else []
    given = [item.partition("=")[2] for item in items if item.partition("=")[0] == KEY]
    if not given:
        return SwapVariant(entry, variant_config(entry, **defaults))
    rest = [item for item in items if item.partition("=")[0] != KEY]
    if name not in READS_REFERENCES:
        raise ValueError(
            f"{entry!r}: {name} reads no reference ({KEY} is a key of {' / '.join(READS_REFERENCES)})"
        )
    if len(given) > 1 or any(item.partition("=")[0] == "replacement" for item in rest):
        raise ValueError(f"{entry!r}: give {KEY} once, without replacement (it sets the replaced rows)")
    try:
        chosen = reference_set(given[0])
    except ValueError as err:
        raise ValueError(f"{entry!r}: {err}") from None
    if name == RUN_METHOD:
        return SwapVariant(entry, _estimator(entry, rest, estimator), chosen)
    keys = [*rest, "replacement=reference"] if name in REPLACING else rest
    inner = f"{name}@{','.join(keys)}" if keys else name
    try:
        config = variant_config(inner, **defaults)
    except ValueError as err:
        raise ValueError(str(err).replace(repr(inner), repr(entry), 1)) from None
    return SwapVariant(entry, config, chosen)


def _estimator(entry: str, keys: list[str], estimator: AttributionConfig | None) -> AttributionConfig:
    """The experiment's estimator config under a ``paper@`` entry's other keys (``reduction`` alone)."""
    base = estimator if estimator is not None else AttributionConfig(method="kronrod")
    if any(item.partition("=")[0] != "reduction" for item in keys):
        raise ValueError(f"{entry!r}: {RUN_METHOD} takes {KEY} and reduction only")
    try:
        return replace(base, **{k: v for k, _, v in (item.partition("=") for item in keys)})
    except ValueError as err:
        raise ValueError(f"{entry!r}: {err}") from None
