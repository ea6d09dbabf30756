"""The sources a pooled table sums (experiments, or project directories run elsewhere): each counted once,
all made with the same settings but the keys the user compares, each column named by them.

Refused, in one line naming the sources: the same source twice (the same directory or commit, or two
sources holding the same content: a copy, or the same run restored twice); sources whose settings differ in
a key that can change a result (:data:`SAME`: the experiment, data, model, training, attribution and
evaluation sections, ``data.swap_order`` among them; not :data:`MAY_DIFFER`), unless ``--label`` names the
key; a ``--label`` key a source does not have.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xurs_pipeline.io import config_hash

# keys every pooled source must share (prefixes end with "."), and those among them that change no result
# (a progress bar, a limit that refuses or passes, where a run computes, where its caches and state go, a
# sanity run that one seed of a sweep carries)
SAME = ("experiment_name", "data.", "model.", "train.", "attribution.", "evaluation.")
MAY_DIFFER = (
    "attribution.progress",
    "attribution.max_grad_evals",
    "attribution.device",
    "evaluation.device",
    "evaluation.swap_randomise",  # the swap study's randomised sanity runs: no pooled table reads them
    "model.local_files_only",
    "train.feature_cache_dir",
    "train.resume",
    "train.state_dir",
)


@dataclass(frozen=True)
class Source:
    """One thing to pool: ``name`` (an experiment's, or a directory's), ``where`` (how the user gave it:
    ``experiment seed-0``, ``--project ../run5``), ``identity`` (its commit or resolved directory),
    ``params`` (dotted keys) and ``content`` (what is pooled)."""

    name: str
    where: str
    identity: str
    params: Mapping[str, Any]
    content: Any


def pooled(sources: Sequence[Source], labels: Sequence[str] = ()) -> dict[str, Source]:
    """column -> every source, refusing what cannot be pooled (module docstring); a column is ``key=value``
    of each ``labels`` key (else the source's name), made unique by the name or ``where``."""
    check_poolable(sources, labels)
    columns: dict[str, Source] = {}
    for source in sources:
        label = ", ".join(f"{key}={source.params[key]}" for key in labels) or source.name
        for column in (label, f"{label} ({source.name})", f"{label} ({source.where})"):
            if column not in columns:
                columns[column] = source
                break
    return columns


def check_poolable(sources: Sequence[Source], labels: Sequence[str] = ()) -> None:
    """ValueError naming what cannot be pooled (module docstring): a source or content twice, an unknown
    ``labels`` key, settings that differ in another key than ``labels``."""
    _refuse_duplicates(sources)
    for key in labels:
        _refuse_unknown_label(sources, key)
    _refuse_differing(sources, labels)


def pooled_hash(columns: Mapping[str, Any]) -> str:
    """The hash of what a table pooled: each column's name and content."""
    return config_hash({name: columns[name] for name in sorted(columns)})


def _refuse_duplicates(sources: Sequence[Source]) -> None:
    seen: dict[str, Source] = {}
    for source in sources:
        for key in (f"identity {source.identity}", f"content {config_hash(source.content)}"):
            if key in seen:
                first = seen[key]
                what = "are the same source" if key.startswith("identity") else "hold the same content"
                raise ValueError(
                    f"{first.where} and {source.where} {what}: pooling both would count one study twice; "
                    "give each once"
                )
            seen[key] = source


def _refuse_unknown_label(sources: Sequence[Source], key: str) -> None:
    for source in sources:
        if key not in source.params:
            close = difflib.get_close_matches(key, list(source.params), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "name a key of its params.yaml"
            raise ValueError(f"--label {key}: {source.where} has no such param; {hint}")


def differing_keys(params: Sequence[Mapping[str, Any]], labels: Sequence[str] = ()) -> list[str]:
    """The keys that can change a result (:func:`changes_a_result`), ``labels`` aside, whose values differ
    among ``params`` (dotted keys; a key missing from one of them differs too), sorted."""
    keys = sorted({k for p in params for k in p if changes_a_result(k) and k not in labels})
    return [key for key in keys if len({config_hash(p.get(key)) for p in params}) > 1]


def _refuse_differing(sources: Sequence[Source], labels: Sequence[str]) -> None:
    keys = differing_keys([s.params for s in sources], labels)
    if keys:
        key = keys[0]
        a, b = list({config_hash(s.params.get(key)): s for s in sources}.values())[:2]
        raise ValueError(
            f"{a.where} has {key}={a.params.get(key)!r}, {b.where} {key}={b.params.get(key)!r}: studies "
            f"made with other settings are not pooled; compare them with --label {key}"
        )


def changes_a_result(key: str) -> bool:
    """Whether a dotted params key is one every pooled source must share (``SAME``, less ``MAY_DIFFER``)."""
    matches = any(key == p or (p.endswith(".") and key.startswith(p)) for p in SAME)
    return matches and key not in MAY_DIFFER
