"""Every compared method against what each model does, judged by the analysis plan (``plan.py``,
docs/swap-plan.md): one ledger of rows, one pass rule.

- The ledger (:func:`scored`): one row per (method, yardstick, role, probe) of a study (``study``: its label
  when several are pooled): ``top`` the cue the method ranks first by the plan's cue score (its summed
  magnitude over each cue, ``plan.CUE_SCORE``; 0 on a tie), ``depends_on`` the cue the yardstick names
  (0 on a tie), ``agrees`` (NaN where the yardstick ties), ``clear`` (margin >= the clear margin),
  ``departs`` (decided, and not the role's training cue), the probe's cue ``order`` (1: cue 1 first); the
  reading's cue-1 share (``share_1``) and costs (``readings.COSTS``), the yardstick's cue-1 share
  (``share_1_yardstick``). Every verdict and per-method figure of the study is read from it. It also holds
  each judged method's degraded copies (``<method>~swapped``, ...: :func:`with_degraded`), which only the
  known-ranking check reads.
- Baselines (``plan.BASELINES``) are rows like any method's and are never judged: ``training_rule`` ranks
  first the cue the role's labels followed (no cue for model C, whose labels follow both: a tie, wrong
  wherever C depends on a cue), ``constant`` always cue 1, ``input_only`` and ``random`` read no model.
- A yardstick *judges* (:func:`validity`) where it recovers every planted text model
  (``planted_texts.validated``) and every model whose labels name a cue learned it (right on at least
  ``plan.MODELS_LEARNED`` of the questions its own cue resolves); how often it names the training cue is
  reported (``as_trained``), never a condition; and where it ranks the degraded copies of every method it
  credits below that method (:func:`known_ranking`; vacuous where it credits none). ``plan.JUDGE`` must
  judge, or no method gets a verdict.
- Cells: every decided probe, the clear ones, each model, each order and each (model, order), each with
  its clustered interval (``evaluation/significance.py``); a cell ``meets_marks`` on its clear probes.
- The planned comparisons (:func:`comparisons`) on each judging yardstick's clear probes, one Holm family.
- The verdict (:func:`verdict`): ``passes``, ``fails`` or ``no verdict`` (with the reasons), ``baseline``
  for a baseline. The planted embedding mechanisms (``planted_methods.py``) are reported beside it, not a
  condition: their truths are one method's definition (IG from zero), so they cannot judge the others.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.attribution.config import TOKEN_METHODS
from xurs_pipeline.attribution.variants import variant_name
from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.data.synthetic.swap import cue_order
from xurs_pipeline.evaluation import degraded
from xurs_pipeline.evaluation.significance import clustered_proportion, holm, paired_test
from xurs_pipeline.evaluation.swap import plan
from xurs_pipeline.evaluation.swap.behaviour import WidthReader
from xurs_pipeline.evaluation.swap.planted_methods import method_recovery
from xurs_pipeline.evaluation.swap.planted_texts import recovery, validated
from xurs_pipeline.evaluation.swap.readings import COLUMNS, COSTS, CueReading
from xurs_pipeline.evaluation.swap.roles import CUE_ROLES, RUNS, TRAINING_CUE
from xurs_pipeline.evaluation.swap.yardsticks import YARDSTICKS, model_dependence


@dataclass(frozen=True)
class FaithfulnessInputs:
    """The probes' records, each role's width reader (``behaviour.label_widths``) and its text-edit
    dependence (``study.model_behaviour`` rows), the trained runs' readings with cue measures, the probes'
    cue positions and each role's accuracy (``inputs.role_accuracy``)."""

    records: list[QuestionRecord]
    readers: dict[str, WidthReader]
    behaviour: pd.DataFrame
    measured: pd.DataFrame
    cues: dict[str, tuple[list[int], list[int]]]
    accuracy: dict[str, dict[str, Any]]


def baseline_readings(record_ids: list[str], runs: list[str]) -> pd.DataFrame:
    """The label rankers' readings under each of the trained ``runs`` (``readings.COLUMNS``)."""
    training_rule, constant = plan.LABEL_RANKERS
    rows = []
    for run in (RUNS[name] for name in runs):
        rule = (float(run.role.cue == 1), float(run.role.cue == 2))  # C: (0, 0), no cue first
        for rid in record_ids:
            rows.append(CueReading(rule, rule).row(training_rule, run.name, rid))
            rows.append(CueReading((1.0, 0.0), (1.0, 0.0)).row(constant, run.name, rid))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def with_degraded(measured: pd.DataFrame) -> pd.DataFrame:
    """``measured`` (``readings.COLUMNS``) and the plan's degraded copies (``plan.DEGRADATIONS``,
    ``evaluation/degraded.py``) of every reading of a judged method (no baseline)."""
    judged = measured[~measured["method"].isin(plan.BASELINES)]
    copies = degraded.degraded(judged, plan.DEGRADATIONS, plan.HALF_SWAP_SEED)
    return pd.concat([measured, copies], ignore_index=True)


def cue_first(measured: pd.DataFrame) -> pd.Series:
    """The cue each reading ranks first by the plan's cue score (``plan.CUE_SCORE``: each cue's summed
    magnitude), 0 on a tie."""
    first, second = measured[f"{plan.CUE_SCORE}_1"], measured[f"{plan.CUE_SCORE}_2"]
    return pd.Series(np.where(first > second, 1, np.where(second > first, 2, 0)), index=measured.index)


def scored(measured: pd.DataFrame, dependence: pd.DataFrame, order: dict[str, int], clear_margin: float):
    """Readings (``readings.COLUMNS``) x the yardsticks' dependence (yardstick, role, record_id, depends_on,
    margin, share_1) -> the ledger (module docstring), one study (``study`` empty)."""
    keep = dependence[["yardstick", "role", "record_id", "depends_on", "margin", "share_1"]]
    readings = measured[["method", "role", "record_id", "share_1", *COSTS]].assign(top=cue_first(measured))
    out = readings.merge(keep, on=["role", "record_id"], suffixes=("", "_yardstick"))
    if len(out) != len(measured) * keep["yardstick"].nunique():
        raise ValueError("a reading without every yardstick's dependence on its (model, probe)")
    decided = out["depends_on"] > 0
    out["agrees"] = np.where(decided, out["top"] == out["depends_on"], np.nan)
    out["clear"] = decided & (out["margin"] >= clear_margin)
    out["departs"] = decided & (out["depends_on"] != out["role"].map(TRAINING_CUE))
    out["order"] = out["record_id"].map(order)
    if out["order"].isna().any():
        raise ValueError("a probe without a cue order")
    out["study"] = ""
    return out


def clusters(rows: pd.DataFrame) -> pd.Series:
    """Each row's unit of independence (``plan.CLUSTER``): its study where several are pooled, else its
    probe (the probe's readings under both models)."""
    return rows["study"] if rows["study"].nunique() > 1 else rows["record_id"].astype(str)


def _share(part: pd.DataFrame, prefix: str, confidence: float) -> dict[str, Any]:
    """``part``'s decided rows' agreement as ``<prefix>``, ``_low``, ``_high``, ``_k``, ``_n``, ``_deff``."""
    decided = part[part["agrees"].notna()]
    s = clustered_proportion(decided["agrees"].astype(bool).tolist(), clusters(decided).tolist(), confidence)
    return {**s.fields(prefix), f"{prefix}_deff": s.deff}


def meets_marks(share: dict[str, Any], prefix: str = "clear") -> bool:
    """The plan's agreement marks on a cell's clear probes: >= ``AGREEMENT_PASS``, lower bound >=
    ``AGREEMENT_PASS_LOWER``."""
    return bool(
        share[f"{prefix}_n"]
        and share[prefix] >= plan.AGREEMENT_PASS
        and share[f"{prefix}_low"] >= plan.AGREEMENT_PASS_LOWER
    )


def cell_frames(part: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Cell name -> its rows: ``all``, each model, each order (``order1``, ``order2``) and each (model,
    order) (``A_order1``, ...). Both orders always: a fixed-order study's ``order2`` cells are empty."""
    cells: dict[str, pd.DataFrame] = {"all": part}
    roles, cue_orders = sorted(set(part["role"])), (1, 2)
    cells.update({role: part[part["role"] == role] for role in roles})
    cells.update({f"order{o}": part[part["order"] == o] for o in cue_orders})
    cells.update(
        {f"{r}_order{o}": part[(part["role"] == r) & (part["order"] == o)] for o in cue_orders for r in roles}
    )
    return cells


def cells(part: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """Every cell's agreement on the decided and on the clear probes, and ``meets_marks``."""
    out: dict[str, Any] = {}
    for name, cell in cell_frames(part).items():
        clear = cell[cell["clear"]]
        out[name] = {**_share(cell, "agreement", confidence), **_share(clear, "clear", confidence)}
        out[name]["meets_marks"] = meets_marks(out[name])
    return out


def one_method(rows: pd.DataFrame) -> pd.DataFrame:
    """The ledger's rows of its first method: every method carries the same dependence."""
    return rows[rows["method"] == rows["method"].iloc[0]]


def models_learned(accuracy: dict[str, dict[str, Any]]) -> bool:
    """Each model whose labels name a cue is right on at least ``plan.MODELS_LEARNED`` of the questions its
    own cue resolves (``inputs.role_accuracy`` by role)."""
    return all(float(accuracy[r]["accuracy_own_cue"]) >= plan.MODELS_LEARNED for r in CUE_ROLES)


def known_ranking(part: pd.DataFrame, confidence: float) -> dict[str, dict[str, Any]]:
    """One yardstick's rows -> per judged method it credits (its pooled clear cell meets the marks), per
    degradation, ``degraded.known_ranking`` on its clear probes at ``plan.ALPHA`` (the study as the
    stratum); empty where it credits none."""
    clear = part[part["clear"]]
    judged = clear[~clear["method"].isin(plan.BASELINES) & ~degraded.is_degraded(clear["method"])]
    shares = {m: _share(mine, "clear", confidence) for m, mine in judged.groupby("method", sort=False)}
    credited = [m for m, share in shares.items() if meets_marks(share)]
    return degraded.known_ranking(_paired(part), credited, plan.DEGRADATIONS, clusters, plan.ALPHA)


def validity(
    rows: pd.DataFrame, planted: dict[str, bool], learned: bool, confidence: float
) -> dict[str, dict[str, Any]]:
    """The ledger's rows, whether each yardstick recovers every planted text model and whether every model
    learned its cue -> per yardstick planted, models_learned, as_trained (share of its decided (model,
    probe) pairs naming the training cue: a description), known_ranking, ranks_degraded and judges (module
    docstring)."""
    out, part = {}, one_method(rows)
    for y in YARDSTICKS:
        decided = part[(part["yardstick"] == y) & (part["depends_on"] > 0)]
        as_trained = float((~decided["departs"].astype(bool)).mean()) if len(decided) else float("nan")
        ranking = known_ranking(rows[rows["yardstick"] == y], confidence)
        ranks = not degraded.unranked(ranking)
        out[y] = {
            "planted": bool(planted[y]),
            "models_learned": learned,
            "as_trained": as_trained,
            "known_ranking": ranking,
            "ranks_degraded": ranks,
            "judges": bool(planted[y] and learned and ranks),
        }
    return out


def _paired(rows: pd.DataFrame) -> pd.DataFrame:
    """One judging yardstick's clear probes, one row per (study, role, probe), one column per method."""
    clear = rows[rows["clear"]].assign(agrees=lambda f: f["agrees"].astype(bool))
    return clear.pivot_table(
        index=["study", "role", "record_id"], columns="method", values="agrees", aggfunc="first"
    ).dropna()


def planned_pairs(methods: list[str]) -> list[tuple[str, str, str]]:
    """The plan's comparisons among ``methods``: (method, against, alternative)."""
    judged = [m for m in methods if m not in plan.BASELINES]
    pairs = [(m, b, "greater") for m in judged for b in plan.LABEL_RANKERS if b in methods]
    if plan.PAPER in judged:
        pairs += [(m, plan.PAPER, "two-sided") for m in judged if m != plan.PAPER]
    return pairs


def comparisons(rows: pd.DataFrame, judges: list[str]) -> list[dict[str, Any]]:
    """The planned comparisons (``planned_pairs``) on each judging yardstick's clear probes, by the
    stratified McNemar test (``evaluation/significance.py``, the study as the stratum), Holm-adjusted as one
    family over every comparison and yardstick."""
    tests = []
    for y in judges:
        wide = _paired(rows[rows["yardstick"] == y])
        if wide.empty:
            continue
        units = clusters(wide.index.to_frame(index=False)).tolist()
        for m, against, alternative in planned_pairs(list(wide.columns)):
            t = paired_test(wide[m].to_numpy(bool), wide[against].to_numpy(bool), units, alternative)
            named = {"method": m, "against": against, "yardstick": y, "alternative": alternative}
            tests.append({**named, **asdict(t)})  # only_first: discordant probes the method has right
    for test, adjusted in zip(tests, holm([t["p"] for t in tests]), strict=True):
        test["p_holm"] = adjusted
        test["significant"] = bool(adjusted <= plan.ALPHA)
    return tests


def label_ranker_failures(part: pd.DataFrame) -> dict[str, dict[str, int]]:
    """One method's clear rows of one yardstick -> on the probes where each label ranker is wrong (the
    training rule: behaviour departs; the constant: the model depends on cue 2), how often the method agrees
    (k of n)."""
    clear = part[part["clear"]]
    training_rule, constant = plan.LABEL_RANKERS
    where = {training_rule: clear["departs"].astype(bool), constant: clear["depends_on"] == 2}
    return {
        b: {"k": int(clear.loc[w, "agrees"].astype(bool).sum()), "n": int(w.sum())} for b, w in where.items()
    }


def power(rows: pd.DataFrame) -> dict[str, int]:
    """The judging yardstick's clear (model, probe) pairs, those where behaviour departs from the training
    rule, and the departures towards each cue (one method's rows: every method carries the same
    dependence)."""
    judge = one_method(rows)
    clear = judge[(judge["yardstick"] == plan.JUDGE) & judge["clear"]]
    departs = clear[clear["departs"].astype(bool)]
    return {
        "studies": int(rows["study"].nunique()),
        "clear": len(clear),
        "departures": len(departs),
        "towards_cue_1": int((departs["depends_on"] == 1).sum()),
        "towards_cue_2": int((departs["depends_on"] == 2).sum()),
    }


def unjudgeable(yardsticks: dict[str, dict[str, Any]], size: dict[str, int]) -> list[str]:
    """Why no method gets a verdict (empty: the plan's conditions hold)."""
    judge = yardsticks[plan.JUDGE]
    held = [f"{k.replace('_', ' ')} {judge[k]}" for k in ("planted", "models_learned", "ranks_degraded")]
    unranked = "".join(f"; not ranked below: {u}" for u in degraded.unranked(judge["known_ranking"]))
    reasons = [] if judge["judges"] else [f"{plan.JUDGE} does not judge ({', '.join(held)}{unranked})"]
    needs = {
        "studies": plan.MIN_STUDIES,
        "clear": plan.MIN_CLEAR,
        "departures": plan.MIN_DEPARTURES,
        "towards_cue_1": plan.MIN_EACH_WAY,
        "towards_cue_2": plan.MIN_EACH_WAY,
    }
    reasons += [f"{key} {size[key]} < {need}" for key, need in needs.items() if size[key] < need]
    return reasons


def verdict(
    method: str, by: dict[str, Any], judges: list[str], tests: list[dict[str, Any]], blocked: list[str]
) -> tuple[str, list[str]]:
    """(``passes``/``fails``/``no verdict``/``baseline``, the reasons) by the plan's one rule: on every
    judging yardstick every (model, cue order) cell meets the marks (an empty one cannot) and each
    label-ranker comparison is there and significant."""
    if method in plan.BASELINES:
        return "baseline", ["a baseline is never judged"]
    if blocked:
        return "no verdict", blocked
    below = [
        (y, name, c)
        for y in judges
        for name, c in by[y]["cells"].items()
        if "_order" in name and not c["meets_marks"]
    ]
    short = "{clear_k}/{clear_n} (low {clear_low:.2f})"
    reasons = [f"{y}, {n}: {short.format(**c) if c['clear_n'] else 'no clear probe'}" for y, n, c in below]
    mine = {(t["yardstick"], t["against"]): t for t in tests if t["method"] == method}
    for y, b in itertools.product(judges, plan.LABEL_RANKERS):
        t = mine.get((y, b))
        if t is None or not t["significant"]:
            p = f"Holm p {t['p_holm']:.3g}" if t else "no comparison"
            reasons.append(f"{y}: not above {b} ({p})")
    return ("fails", reasons) if reasons else ("passes", [])


def faithfulness(
    rows: pd.DataFrame, yardsticks: dict[str, dict[str, Any]], planted: pd.DataFrame, confidence: float
) -> dict[str, Any]:
    """The ledger's rows, the yardsticks' validity and the planted embedding recovery -> per method: per
    yardstick its cells and where the label rankers fail; its planned comparisons; its verdict."""
    rows = rows[~degraded.is_degraded(rows["method"])]  # read by the known-ranking check alone
    judges = [y for y in YARDSTICKS if yardsticks[y]["judges"]]
    tests = comparisons(rows, judges)
    size = power(rows)
    blocked = unjudgeable(yardsticks, size)
    methods: dict[str, Any] = {}
    for m in dict.fromkeys(rows["method"]):
        by: dict[str, Any] = {}
        for y in YARDSTICKS:
            mine = rows[(rows["yardstick"] == y) & (rows["method"] == m)]
            by[y] = {"cells": cells(mine, confidence), "label_rankers_wrong": label_ranker_failures(mine)}
        recovered = planted[planted["method"] == m]
        by["planted_embeddings"] = dict(
            zip(recovered["mechanism"], recovered["recovered"].astype(bool), strict=True)
        )
        by["comparisons"] = [t for t in tests if m in (t["method"], t["against"])]
        by["verdict"], by["reasons"] = verdict(m, by, judges, tests, blocked)
        methods[m] = by
    return {
        "methods": methods,
        "yardsticks": yardsticks,
        "judges": judges,
        "power": size,
        "plan": plan.PLAN,
        "plan_digest": plan.plan_digest(),
    }


def study_faithfulness(
    study: FaithfulnessInputs, clear_margin: float, confidence: float, layer_ig_steps: int = 32
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The swap study's faithfulness: (the ledger, :func:`faithfulness`'s result with the planted text
    recovery table)."""
    dependence = pd.concat(
        [
            model_dependence(study.records, reader, role, study.behaviour[study.behaviour["role"] == role])
            for role, reader in study.readers.items()
        ],
        ignore_index=True,
    )
    baselines = baseline_readings(sorted(study.cues), sorted(set(study.measured["run"])))
    measured = with_degraded(pd.concat([study.measured, baselines], ignore_index=True))
    order = {rid: cue_order(c) for rid, c in study.cues.items()}  # which cue the probe states first
    rows = scored(measured, dependence, order, clear_margin)
    recovered = recovery(study.records)
    token_methods = [m for m in dict.fromkeys(study.measured["method"]) if variant_name(m) in TOKEN_METHODS]
    planted = method_recovery(token_methods, layer_ig_steps)
    yardsticks = validity(rows, validated(recovered), models_learned(study.accuracy), confidence)
    result = faithfulness(rows, yardsticks, planted, confidence)
    result["planted_texts"] = recovered.to_dict(orient="records")
    return rows, result
