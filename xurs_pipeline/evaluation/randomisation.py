"""Model-randomisation sanity check (beyond the paper; Adebayo et al., 2018, cascading randomisation).

Re-initialise the output head, then additionally the top transformer blocks one at a time (on a copy;
the given model is untouched), re-run the attribution, and measure how far it moved from the trained
model's attribution: Spearman of token magnitudes, top-k overlap, cosine and relative distance of the
signed vectors. An attribution that barely moves when the weights it should depend on are randomised
does not explain the model.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import pandas as pd
import torch
from torch import nn

from xurs_pipeline.attribution.model import block_list_name
from xurs_pipeline.evaluation.comparisons import RunRecord, compare_runs

AttributeFn = Callable[[nn.Module], Sequence[RunRecord]]


def cascade_names(model: nn.Module, head: str, n_blocks: int) -> list[str]:
    """[head, last block, second-to-last block, ...]: the cumulative order of cascading randomisation."""
    model.get_submodule(head)  # raises AttributeError naming the missing head
    blocks = block_list_name(model)
    count = len(model.get_submodule(blocks))
    if n_blocks > count:
        raise ValueError(f"evaluation.randomisation_blocks={n_blocks}: the model has only {count} blocks")
    return [head, *(f"{blocks}.{i}" for i in range(count - 1, count - 1 - n_blocks, -1))]


def reinitialise(model: nn.Module, name: str, seed: int) -> int:
    """Call ``reset_parameters`` on every submodule of ``model.<name>`` that has one, seeded.

    Returns how many modules were reset; raises when there are none (nothing would be randomised).
    Parameters of modules without ``reset_parameters`` (e.g. some RMSNorm classes) keep their values.
    """
    target = model.get_submodule(name)
    count = 0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for module in target.modules():
            reset = getattr(module, "reset_parameters", None)
            if callable(reset):
                reset()
                count += 1
    if count == 0:
        raise ValueError(f"module {name!r} has no submodule with reset_parameters(); cannot randomise it")
    return count


def randomised_runs(
    model: nn.Module, attribute: AttributeFn, cascade: Sequence[str], seed: int = 0
) -> list[tuple[str, list[RunRecord]]]:
    """``(module, records)`` per cascade step: the attribution after cumulatively re-initialising each
    module in ``cascade`` (step k re-initialises ``cascade[k]`` with seed ``seed + k`` on a copy)."""
    if not cascade:
        raise ValueError("randomisation cascade is empty: name at least the head")
    randomised = copy.deepcopy(model)
    out = []
    for step, name in enumerate(cascade):
        reinitialise(randomised, name, seed + step)
        out.append((name, list(attribute(randomised))))
    return out


def randomisation_check(
    model: nn.Module,
    attribute: AttributeFn,
    cascade: Sequence[str],
    seed: int = 0,
    topk: int = 10,
    original: Sequence[RunRecord] | None = None,
    runs: list[tuple[str, list[RunRecord]]] | None = None,
) -> pd.DataFrame:
    """Attribution movement after cumulatively re-initialising each module in ``cascade``.

    attribute(model) -> RunRecords (one per explained question). ``original``: the trained model's
    records when already computed (the attribution run's own, same questions and options), else
    ``attribute(model)``; ``runs``: :func:`randomised_runs` when already computed. Returns one row per
    (step, question): step (0-based), randomised (the module re-initialised at this step, the earlier
    ones stay random), and the :func:`compare_runs` metrics against the trained model's attribution.
    """
    if not cascade:
        raise ValueError("randomisation cascade is empty: name at least the head")
    trained = list(original) if original is not None else list(attribute(model))
    runs = runs if runs is not None else randomised_runs(model, attribute, cascade, seed)
    frames = []
    for step, (name, records) in enumerate(runs):
        frame = compare_runs(records, trained, topks=(topk,), names=(name, "trained"))
        frames.append(frame.assign(step=step, randomised=name))
    return pd.concat(frames, ignore_index=True)
