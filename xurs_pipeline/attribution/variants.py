"""Method entries named in one string, ``name@key=value,key=value`` (``evaluation.swap_methods``): a method
variant and the references it reads. No torch here: entries are validated with the config.

- The method's own keys (``config.METHOD_KEYS``), each checked by ``AttributionConfig``:
  ``occlusion_token@replacement=mean``, ``grad_x_input@reduction=l2``,
  ``sequential_ig@sequential_ig_steps=8``.
- ``references=R``, the swap study's reference set (``evaluation/swap/probe_references.py`` builds it per
  probe): ``layer_ig@references=train:8``, ``occlusion_token@references=marginal:16``. Each set holds one
  or more references B_j (token ids fitted to the probe's L positions, or the zero embeddings):

  - ``zero``: the zero embeddings (the zero baseline, Eq. 8's replacement);
  - ``pad``: the pad token's embedding row at every position (a pad baseline);
  - ``train:k``: the first k training prompts, ordered and fitted to the probe as the paper's estimator
    fits its references (``attribution.reference_order``, ``attribution.reference_alignment``; the
    paper's run reads ``train:<attribution.refs_per_collection>``);
  - ``counterfactual``: the probe with both cues resolved to its label (each cue names only P), prepared
    as ``prepare`` prepares it and aligned to the probe by token sequence (Sec. 5.4): the text both share
    sits in place, so only the cues' tokens differ;
  - ``marginal:K``: K training prompts drawn at random with replacement (seeded by ``evaluation.seed`` and
    the probe), fitted by position (Sec. 3.3): at each position K tokens drawn from the training texts at
    that position, Kim et al. 2020's marginalisation with the training texts as the distribution.

A method reads every reference of its set and averages (App. B.2: references averaged before magnitudes):
``layer_ig`` integrates from each B_j, ``sequential_ig`` takes its baseline rows from each, occlusion and
Shapley replace rows by each (``attribution.replacement='reference'``), so ``occlusion_token`` under
``marginal:K`` scores ``F(X) - mean_j F(X with row i = B_j,i)``. The gradients at the input (``grad_l2``,
``grad_x_input``) read no reference and refuse the key. ``paper`` (:data:`RUN_METHOD`) is read from the
attribute runs (its references: ``attribution.reference`` and ``refs_per_collection``);
``paper@references=R`` (and ``reduction``) reruns the experiment's estimator on the probes from every
reference of R, as one collection. An entry without the key reads the first training reference
(``train:1``), as ``layer_ig`` and ``replacement=reference`` always have.

A list of entries (:func:`check_entries`) names each computation once: a key given twice, or two entries
that compute the same readings under two names (``layer_ig`` and ``layer_ig@references=train:1``), are
refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from xurs_pipeline.attribution.config import METHOD_KEYS, OWN_REDUCTION, TOKEN_METHODS, AttributionConfig

RUN_METHOD = "paper"  # the method row read from the attribute stages' runs (attribution.method)
KINDS = ("zero", "pad", "counterfactual", "train", "marginal")
COUNTED = ("train", "marginal")  # kinds written kind:count
KEY = "references"
# the methods that read a reference, and of them those whose replaced or baseline rows come from it
READS_REFERENCES = (RUN_METHOD, "layer_ig", *METHOD_KEYS["replacement"])
REPLACING = METHOD_KEYS["replacement"]
COUNT = re.compile(r"[1-9][0-9]*")  # a reference count: ASCII digits, >= 1 ('²'.isdigit() is True)


def variant_name(entry: str) -> str:
    """The method a variant entry names (the part before ``@``)."""
    return entry.split("@", 1)[0]


def entry_items(entry: str) -> list[tuple[str, str]]:
    """The ``key=value`` items after ``@`` (none without it), in order; ValueError in one line naming the
    entry for an item that is not ``key=value`` or a key given twice."""
    _, at, spec = entry.partition("@")
    if not at:
        return []
    items = [item.partition("=") for item in spec.split(",")]
    if any(not eq or not key or not value for key, eq, value in items):
        raise ValueError(f"{entry!r}: write name@key=value[,key=value], keys from {[*METHOD_KEYS, KEY]}")
    keys = [key for key, _, _ in items]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"{entry!r}: {', '.join(twice)} given twice (give each key once)")
    return [(key, value) for key, _, value in items]


def variant_config(entry: str, **defaults: object) -> AttributionConfig:
    """The config of one entry: ``defaults`` (keys the caller sets for the method when it reads them,
    e.g. the swap study's ``layer_ig_steps``) overridden by the entry's own keys. A malformed entry, a key
    the method does not read or a bad value raises ValueError in one line naming the entry."""
    name = variant_name(entry)
    keys: dict[str, object] = {k: v for k, v in defaults.items() if name in METHOD_KEYS.get(k, ())}
    items = entry_items(entry)
    if items and name not in TOKEN_METHODS:
        raise ValueError(f"{entry!r}: only a token method of {list(TOKEN_METHODS)} takes @keys")
    for key, value in items:
        if key not in METHOD_KEYS:
            raise ValueError(f"{entry!r}: write name@key=value[,key=value], keys from {list(METHOD_KEYS)}")
        integer = AttributionConfig.__dataclass_fields__[key].type in (int, "int")
        if integer and not re.fullmatch(r"[+-]?[0-9]+", value):  # ASCII: int() also reads '٣' as 3
            raise ValueError(f"{entry!r}: {key} must be an integer, got {value!r}")
        keys[key] = int(value) if integer else value
    try:
        return AttributionConfig(method=name, **keys)  # type: ignore[arg-type]
    except ValueError as err:
        raise ValueError(f"{entry!r}: {err}") from None


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
    """``zero``, ``pad``, ``counterfactual``, ``train:<k>`` or ``marginal:<K>`` (k, K >= 1, ASCII digits);
    ValueError in one line otherwise."""
    kind, colon, count = text.partition(":")
    if kind in COUNTED and COUNT.fullmatch(count):
        return ReferenceSet(kind, int(count))
    if kind in KINDS and kind not in COUNTED and not colon:
        return ReferenceSet(kind)
    raise ValueError(
        f"{KEY}={text!r}: must be zero, pad, counterfactual, train:<k> or marginal:<K> (k, K >= 1 in digits "
        "0-9)"
    )


@dataclass(frozen=True)
class SwapVariant:
    """One entry of ``evaluation.swap_methods`` run through ``attribution/methods/``: its method's config
    and its reference set."""

    entry: str
    config: AttributionConfig
    references: ReferenceSet = FIRST_TRAINING

    @property
    def computation(self) -> tuple[AttributionConfig, ReferenceSet]:
        """What the entry computes, whatever its spelling: the config with a gradient method's ``own``
        reduction spelt out, and the reference set."""
        cfg = self.config
        if cfg.method in OWN_REDUCTION:
            cfg = replace(cfg, reduction=cfg.token_reduction)
        return cfg, self.references

    @property
    def unreduced(self) -> tuple[AttributionConfig, ReferenceSet]:
        """What the entry computes before its magnitudes are reduced over hidden: two entries that differ
        only in ``reduction`` (reduction twins) share it, so one computation serves both."""
        return replace(self.config, reduction="own"), self.references


def _first_alike(variants: Sequence[SwapVariant], key: Callable[[SwapVariant], object]) -> dict[str, str]:
    """Each variant's entry -> the first entry whose ``key`` equals its own (itself when it is the first)."""
    first: list[SwapVariant] = []  # configs hold lists: compared, not hashed
    alike: dict[str, str] = {}
    for variant in variants:
        same = next((v for v in first if key(v) == key(variant)), None)
        if same is None:
            first.append(variant)
        alike[variant.entry] = (same or variant).entry
    return alike


def reduction_twins(variants: Sequence[SwapVariant]) -> dict[str, str]:
    """Each variant's entry -> the first entry whose computation it shares up to the reduction
    (:attr:`SwapVariant.unreduced`; itself when it is the first)."""
    return _first_alike(variants, lambda v: v.unreduced)


def swap_variant(entry: str, estimator: AttributionConfig | None = None, **defaults: object) -> SwapVariant:
    """The entry's config (:func:`variant_config`, ``defaults`` as there) and reference set; a bad
    ``references`` value, a method that reads none, or ``replacement`` beside it raise ValueError in one
    line naming the entry. ``paper@references=R[,reduction=r]`` reruns the experiment's estimator
    (``estimator``: its ``attribution`` config; without it, as when the config is checked, a stand-in that
    checks the keys alone) from the set R."""
    name, items = variant_name(entry), entry_items(entry)
    given = [value for key, value in items if key == KEY]
    if not given:
        return SwapVariant(entry, variant_config(entry, **defaults))
    rest = [f"{key}={value}" for key, value in items if key != KEY]
    if name not in READS_REFERENCES:
        raise ValueError(
            f"{entry!r}: {name} reads no reference ({KEY} is a key of {' / '.join(READS_REFERENCES)})"
        )
    if any(key == "replacement" for key, _ in items):
        raise ValueError(f"{entry!r}: give {KEY} without replacement (it sets the replaced rows)")
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


def check_entries(entries: Sequence[str], **defaults: object) -> dict[str, SwapVariant]:
    """Each variant entry of ``entries`` (those run through the methods: every entry but the plain names,
    which the caller checks against its own list) by entry (:func:`swap_variant`, ``defaults`` as there);
    ValueError in one line naming the two entries when two compute the same readings under two names
    (a plain token method and its spelled-out default, ``layer_ig`` and ``layer_ig@references=train:1``)."""
    variants = {e: swap_variant(e, **defaults) for e in entries if "@" in e or e in TOKEN_METHODS}
    alike = _first_alike(list(variants.values()), lambda v: v.computation)
    twice = next(((e, first) for e, first in alike.items() if e != first), None)
    if twice is not None:
        raise ValueError(f"{twice[0]!r} computes what {twice[1]!r} computes: name it once")
    return variants


def training_reads(entries: Sequence[str]) -> dict[str, int]:
    """How many training prompts each entry naming ``references=train:k`` reads (k, by entry): the training
    split must hold at least that many (``marginal:K`` draws with replacement, from any number)."""
    variants = check_entries(entries).values()
    return {v.entry: v.references.count for v in variants if KEY in v.entry and v.references.kind == "train"}
