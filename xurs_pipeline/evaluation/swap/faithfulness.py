"""Every compared method against every yardstick (``yardsticks.py``), per model and per cue order, beside
baselines that read no model, with the comparisons as tests (``significance.py``) (issue 53,
docs/swap-control.md).

- Baselines (rows like any method's): ``training_rule`` ranks first the cue the role's labels followed (what
  a method that knew only the labels scores), ``constant`` always cue 1; ``input_only`` and ``random`` are
  among the study's methods already.
- Per (method, yardstick, role, probe): ``agrees`` (the cue the method ranks first is the one the yardstick
  names; NaN where the yardstick ties), ``clear`` (margin >= the clear margin), ``departs`` (decided, and not
  the role's training cue), the probe's cue ``order`` (1: cue 1 stated first, 2: cue 2 first).
- Cells: every probe, the clear ones, each model, each order and each (model, order), each k of n with its
  Wilson interval. A cell *passes* on its clear probes by ``agreement.agrees_with_behaviour``'s marks.
- A yardstick is *validated* where it recovers every planted model's dependence
  (``planted_texts.validated``) and, on the trained models (each right on at least
  ``MODELS_LEARNED`` of the questions its own cue resolves), names the training cue on at least
  ``RULE_AGREEMENT`` of the decided probes; the training rule is validated by the models' accuracy alone.
- Planted mechanisms (``planted_methods.py``: linear, saturated, cancelling, interaction): each token
  method's answer against the hand-set dependence, no intervention involved.
- A method is *trustworthy* where every cell (model x order) of every validated yardstick passes and it
  recovers every planted mechanism; a method the planted models cannot run (the attribute stages' estimator,
  the nulls, the baselines) is not called trustworthy.
- Tests, per yardstick: on the departing probes, the binomial test against chance; the best method (highest
  agreement among those that read the model) against each other method and baseline by exact McNemar and by
  the bootstrap over trained models, each family Holm-adjusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.attribution.config import TOKEN_METHODS
from xurs_pipeline.attribution.variants import variant_name
from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.swap import cue_order
from xurs_pipeline.evaluation.swap.agreement import AGREEMENT_PASS, AGREEMENT_PASS_LOWER, proportion
from xurs_pipeline.evaluation.swap.behaviour import WidthReader
from xurs_pipeline.evaluation.swap.planted_methods import method_recovery
from xurs_pipeline.evaluation.swap.planted_texts import recovery, validated
from xurs_pipeline.evaluation.swap.readings import COLUMNS, NULL_METHODS, CueReading
from xurs_pipeline.evaluation.swap.roles import ROLES, RUNS
from xurs_pipeline.evaluation.swap.significance import beats_chance, holm, mcnemar, model_bootstrap
from xurs_pipeline.evaluation.swap.yardsticks import (
    EDIT_YARDSTICKS,
    RULE_YARDSTICK,
    YARDSTICKS,
    model_dependence,
)

BASELINES = ("training_rule", "constant")
MODELS_LEARNED, RULE_AGREEMENT = 0.8, 0.75


@dataclass(frozen=True)
class FaithfulnessInputs:
    """The probes' records, each role's width reader (``behaviour.label_widths``) and its text-edit
    dependence (``behaviour.cue_dependence`` rows), the trained runs' readings with cue measures, the probes'
    cue positions and each role's accuracy (``inputs.role_accuracy``)."""

    records: list[QuestionRecord]
    readers: dict[str, WidthReader]
    behaviour: pd.DataFrame
    measured: pd.DataFrame
    cues: dict[str, tuple[list[int], list[int]]]
    accuracy: dict[str, dict[str, Any]]


def baseline_readings(record_ids: list[str]) -> pd.DataFrame:
    """``BASELINES``' readings under each trained run (``readings.COLUMNS``)."""
    rows = []
    for name, run in RUNS.items():
        if run.randomised:
            continue
        rule = (1.0, 0.0) if run.role.cue == 1 else (0.0, 1.0)
        for rid in record_ids:
            rows.append(CueReading(rule, rule).row("training_rule", name, rid))
            rows.append(CueReading((1.0, 0.0), (1.0, 0.0)).row("constant", name, rid))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def orders(cues: dict[str, tuple[list[int], list[int]]]) -> dict[str, int]:
    """Probe -> which cue its text states first (1 or 2), from the prepared cue positions."""
    return {rid: cue_order(c) for rid, c in cues.items()}


def scored(measured: pd.DataFrame, dependence: pd.DataFrame, order: dict[str, int], clear_margin: float):
    """Readings (method, role, record_id, top) x the yardsticks' dependence (yardstick, role, record_id,
    depends_on, margin) -> one row per (method, yardstick, role, probe) (module docstring), with the trained
    model it was read under (``model``: the bootstrap's cluster)."""
    keep = dependence[["yardstick", "role", "record_id", "depends_on", "margin"]]
    out = measured[["method", "role", "record_id", "top"]].merge(keep, on=["role", "record_id"])
    if len(out) != len(measured) * keep["yardstick"].nunique():
        raise ValueError("a reading without every yardstick's dependence on its (model, probe)")
    decided = out["depends_on"] > 0
    out["agrees"] = np.where(decided, out["top"] == out["depends_on"], np.nan)
    out["clear"] = decided & (out["margin"] >= clear_margin)
    out["departs"] = decided & (out["depends_on"] != out["role"].map({n: r.cue for n, r in ROLES.items()}))
    out["order"] = out["record_id"].map(order)
    if out["order"].isna().any():
        raise ValueError("a probe without a cue order")
    out["model"] = out["role"]  # one trained model per role in one study (pooled.py: per study and role)
    return out


def _cells(part: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """Every cell's agreement (all decided probes, and clear) with its pass mark."""
    cells: dict[str, pd.DataFrame] = {"all": part}
    for role in sorted(set(part["role"])):
        cells[role] = part[part["role"] == role]
    for order in sorted(set(part["order"])):
        cells[f"order{order}"] = part[part["order"] == order]
        for role in sorted(set(part["role"])):
            cells[f"{role}_order{order}"] = part[(part["role"] == role) & (part["order"] == order)]
    out: dict[str, Any] = {}
    for name, cell in cells.items():
        decided = cell["agrees"].dropna().astype(bool)
        clear = cell.loc[cell["clear"], "agrees"].astype(bool)
        out[name] = {**proportion(int(decided.sum()), len(decided), "agreement", confidence),
                     **proportion(int(clear.sum()), len(clear), "clear", confidence)}  # fmt: skip
        out[name]["passes"] = cell_passes(out[name]["clear_k"], out[name]["clear_n"], confidence)
    return out


def cell_passes(k: int, n: int, confidence: float = 0.95) -> bool:
    """``agreement.agrees_with_behaviour``'s marks on ``k`` of ``n`` clear probes (counts, so pooled
    seeds are judged the same way)."""
    if not n:
        return False
    p = proportion(k, n, "a", confidence)
    return bool(p["a"] >= AGREEMENT_PASS and p["a_low"] >= AGREEMENT_PASS_LOWER)


def validated_yardsticks(
    dependence: pd.DataFrame, planted: dict[str, bool], accuracy: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Yardstick -> planted (recovers every planted model), models_learned, rule_agreement (share of decided
    probes naming the training cue), validated (module docstring)."""
    learned = all(float(a["accuracy_own_cue"]) >= MODELS_LEARNED for a in accuracy.values())
    out = {}
    for y in YARDSTICKS:
        part = dependence[(dependence["yardstick"] == y) & (dependence["depends_on"] > 0)]
        rule = float(part["as_trained"].mean()) if len(part) else float("nan")
        ok_planted = planted.get(y, True)  # the training rule has no edit to validate
        out[y] = {"planted": ok_planted, "models_learned": learned, "rule_agreement": rule,
                  "validated": bool(ok_planted and learned and rule >= RULE_AGREEMENT)}  # fmt: skip
    return out


def paired_tests(part: pd.DataFrame, seed: int, resamples: int) -> dict[str, dict[str, Any]]:
    """One yardstick's decided probes -> the best model-reading method against every other method: exact
    McNemar and the model bootstrap, each Holm-adjusted over the methods (module docstring)."""
    decided = part[part["agrees"].notna()].assign(agrees=lambda f: f["agrees"].astype(bool))
    wide = decided.pivot_table(index=["model", "record_id"], columns="method", values="agrees",
                               aggfunc="first").dropna()  # fmt: skip
    readers = [m for m in wide.columns if m not in BASELINES and m not in NULL_METHODS]
    if not readers or wide.empty:
        return {}
    best = max(readers, key=lambda m: (wide[m].mean(), -readers.index(m)))
    others = [m for m in wide.columns if m != best]
    models = [str(model) for model, _ in wide.index]
    tests = {m: (mcnemar(wide[best].to_numpy(bool), wide[m].to_numpy(bool)),
                 model_bootstrap(wide[best].to_numpy(bool), wide[m].to_numpy(bool), models, resamples,
                                 seed=seed)) for m in others}  # fmt: skip
    p_mcnemar = holm([t[0].p for t in tests.values()])
    p_boot = holm([t[1].p for t in tests.values()])
    out = {best: {"best": True}}
    for (m, (mc, boot)), pm, pb in zip(tests.items(), p_mcnemar, p_boot, strict=True):
        out[m] = {"best": False, "against": best, "only_best": mc.only_first, "only_this": mc.only_second,
                  "mcnemar_p": mc.p, "mcnemar_p_holm": pm, "difference": boot.mean,
                  "difference_low": boot.low, "difference_high": boot.high, "bootstrap_p": boot.p,
                  "bootstrap_p_holm": pb, "models": boot.clusters}  # fmt: skip
    return out


def faithfulness(
    rows: pd.DataFrame, validity: dict[str, dict[str, Any]], planted: pd.DataFrame, confidence: float,
    seed: int, resamples: int,
) -> dict[str, Any]:  # fmt: skip
    """``scored``'s rows and the planted mechanisms' recovery (``planted_methods.method_recovery``) -> per
    method: per yardstick its cells, its departure test and its paired test; per mechanism whether it
    recovered the planted cue; ``trustworthy`` (module docstring); and the yardsticks' validity."""
    methods: dict[str, Any] = {}
    for y in YARDSTICKS:
        part = rows[rows["yardstick"] == y]
        paired = paired_tests(part, seed, resamples)
        for m in dict.fromkeys(part["method"]):
            mine = part[part["method"] == m]
            departing = mine.loc[mine["departs"], "agrees"].astype(bool).tolist()
            test = beats_chance(departing)
            methods.setdefault(m, {})[y] = {
                "cells": _cells(mine, confidence),
                "departs": {"k": test.k, "n": test.n, "p": test.p},
                "paired": paired.get(m, {}),
            }
    valid = [y for y in YARDSTICKS if validity[y]["validated"]]
    for m, by in methods.items():
        cells = [c for y in valid for name, c in by[y]["cells"].items() if "_order" in name]
        mine = planted[planted["method"] == m]
        by["planted"] = dict(zip(mine["mechanism"], mine["recovered"].astype(bool), strict=True))
        by["trustworthy"] = bool(valid and cells and all(c["passes"] for c in cells) and len(mine)
                                 and mine["recovered"].all())  # fmt: skip
        by["validated_yardsticks"] = valid
    return {"methods": methods, "yardsticks": validity, "edit_yardsticks": list(EDIT_YARDSTICKS),
            "rule_yardstick": RULE_YARDSTICK}  # fmt: skip


def study_faithfulness(
    study: FaithfulnessInputs, clear_margin: float, confidence: float, seed: int, resamples: int,
    layer_ig_steps: int = 32,
) -> tuple[pd.DataFrame, dict[str, Any]]:  # fmt: skip
    """The swap study's faithfulness: (the ``scored`` rows, :func:`faithfulness`'s result with the planted
    recovery table and each yardstick's dependence counts)."""
    dependence = pd.concat([
        model_dependence(study.records, study.readers[role], role,
                         study.behaviour[study.behaviour["role"] == role]) for role in study.readers
    ], ignore_index=True)  # fmt: skip
    recovered = recovery(study.records)
    validity = validated_yardsticks(dependence, validated(recovered), study.accuracy)
    measured = pd.concat([study.measured, baseline_readings(sorted(study.cues))], ignore_index=True)
    rows = scored(measured, dependence, orders(study.cues), clear_margin)
    token_methods = [m for m in dict.fromkeys(study.measured["method"]) if variant_name(m) in TOKEN_METHODS]
    result = faithfulness(rows, validity, method_recovery(token_methods, layer_ig_steps), confidence, seed,
                          resamples)  # fmt: skip
    result["planted"] = recovered.to_dict(orient="records")
    return rows, result


def faithfulness_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """The DVC metric view: per method and yardstick the agreement and its Wilson low in every cell, the
    departure test's p and the paired test's Holm-adjusted p values; ``trustworthy``."""
    out: dict[str, Any] = {}
    for m, by in result["methods"].items():
        view: dict[str, Any] = {"trustworthy": by["trustworthy"], "planted": by["planted"]}
        for y in YARDSTICKS:
            if y not in by:
                continue
            cells = {name: {"agreement": c["agreement"], "agreement_low": c["agreement_low"],
                            "n": c["agreement_n"]} for name, c in by[y]["cells"].items()}  # fmt: skip
            paired = {k: by[y]["paired"][k] for k in ("mcnemar_p_holm", "bootstrap_p_holm", "against")
                      if k in by[y]["paired"]}  # fmt: skip
            view[y] = {**cells, "departs_p": by[y]["departs"]["p"], **paired}
        out[m] = view
    return out
