"""The swap study from its inputs (the ``swap`` task reads them and writes what this returns).

One reading per (method, run, probe) (``readings.py``) with its cue measures computed once
(``measures.with_cue_measures``); from them: each ranking's study (``measures.swap_summary``) and the swap
and the headline; the one ledger of every compared method and baseline against what each
model does (``faithfulness.py``), from which its verdict and each method's description
(``agreement.descriptions``) are read. Besides them: what each model depends on (``behaviour.py``), how often
it behaves as trained, each role's accuracy by which cue resolves the question (``inputs.role_accuracy``) and
the runs' completeness residuals (Eq. 9).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.config import RootConfig
from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.evaluation.swap.agreement import behaves_as_trained, descriptions
from xurs_pipeline.evaluation.swap.behaviour import WidthReader, cue_dependence, label_widths
from xurs_pipeline.evaluation.swap.faithfulness import FaithfulnessInputs, study_faithfulness
from xurs_pipeline.evaluation.swap.inputs import (
    input_only_magnitudes,
    prepared_references,
    role_accuracy,
    role_test_records,
)
from xurs_pipeline.evaluation.swap.measures import (
    RANKINGS,
    ranking_frame,
    swap_summary,
    with_cue_measures,
)
from xurs_pipeline.evaluation.swap.probe_references import ReferenceSource, probe_reference_ids
from xurs_pipeline.evaluation.swap.readings import (
    NULL_METHODS,
    RUN_METHOD,
    ProbeSet,
    fixed_readings,
    method_configs,
    model_readings,
)
from xurs_pipeline.evaluation.swap.roles import FIRST_ROLE, ROLES, RUNS
from xurs_pipeline.evaluation.swap.yardsticks import yardstick_widths
from xurs_pipeline.io import ArtifactError
from xurs_pipeline.train.predict import prompt_masses


@dataclass(frozen=True)
class StudyInputs:
    """The config, the prepared prompts, each run's attribution rows (``roles.RUNS`` name -> frame), the
    probes' records and each role's (classifier, tokenizer) on the device the study runs on."""

    cfg: RootConfig
    prompts: pd.DataFrame
    runs: dict[str, pd.DataFrame]
    records: list[QuestionRecord]
    models: dict[str, tuple[Any, Any]]


@dataclass(frozen=True)
class StudyResult:
    """``per_question.parquet``, ``behaviour.parquet``, ``summary.json``, the headline and
    ``faithfulness.parquet``."""

    scores: pd.DataFrame
    behaviour: pd.DataFrame
    summary: dict[str, Any]
    headline: dict[str, Any]
    faithfulness: pd.DataFrame  # per (method, yardstick, role, probe): faithfulness.scored


def probe_ids(runs: dict[str, pd.DataFrame]) -> list[str]:
    """The probes the first model's run explains; every other run must explain the same ones."""
    probes = sorted(set(runs[FIRST_ROLE]["record_id"]))
    for name, frame in runs.items():
        if sorted(set(frame["record_id"])) != probes:
            raise ArtifactError(
                f"swap run {name} explains other questions than model {FIRST_ROLE}'s attribute run"
            )
    return probes


def shared_embedding(models: dict[str, tuple[Any, Any]]) -> np.ndarray:
    """The one input embedding (vocab, hidden) every model shares (float64)."""
    first, *others = (
        models[r][0].backbone.get_input_embeddings().weight.detach().double().cpu().numpy() for r in ROLES
    )
    if not all(np.array_equal(first, other) for other in others):
        raise ArtifactError("the swap models embed tokens differently: the swap study needs one backbone")
    return first


def probe_set(inputs: StudyInputs) -> ProbeSet:
    """The probes as every method reads them (``readings.ProbeSet``)."""
    prompts, probes = inputs.prompts, probe_ids(inputs.runs)
    references = prepared_references(
        prompts, probes, inputs.cfg.attribution, inputs.models[FIRST_ROLE][1].pad_token_id
    )
    by_id = prompts.set_index("record_id")
    cues = {rid: [list(map(int, c)) for c in by_id.loc[rid, "cue_positions"]] for rid in probes}
    ids = {rid: list(map(int, by_id.loc[rid, "input_ids"])) for rid in probes}
    return ProbeSet(
        ids=ids,
        cues={rid: (cues[rid][0], cues[rid][1]) for rid in probes},
        labels={rid: int(by_id.loc[rid, "answer_idx"]) for rid in probes},
        references=references,
        input_only=input_only_magnitudes(prompts, references, shared_embedding(inputs.models)),
        runs={name: frame.set_index("record_id") for name, frame in inputs.runs.items()},
        reference_sets=reference_sets(inputs, ids),
    )


def reference_sets(inputs: StudyInputs, ids: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
    """Every reference set the compared entries name (``attribution/variants.py``) for every probe: set
    name -> record id -> (n, seq) token ids or None (``probe_references.probe_reference_ids``)."""
    cfg, ev = inputs.cfg, inputs.cfg.evaluation
    entries = [m for m in ev.swap_methods if m != RUN_METHOD and m not in NULL_METHODS]
    chosen = {v.references for v in method_configs(entries, ev.swap_layer_ig_steps).values()}
    source = ReferenceSource.of(
        inputs.prompts, cfg.attribution, inputs.models[FIRST_ROLE][1], cfg.data.max_tokens, ev.seed
    )
    records = {r.record_id: r for r in inputs.records}
    return {
        c.name: {rid: probe_reference_ids(c, records[rid], ids[rid], source) for rid in ids}
        for c in sorted(chosen, key=lambda c: c.name)
    }


def readings(inputs: StudyInputs, probes: ProbeSet) -> pd.DataFrame:
    """Every reading of the study with its cue measures: the fixed ones and each trained model's methods."""
    ev = inputs.cfg.evaluation
    methods = method_configs(
        [m for m in ev.swap_methods if m != RUN_METHOD and m not in NULL_METHODS],
        ev.swap_layer_ig_steps,
        inputs.cfg.attribution,
    )
    frames = [fixed_readings(probes, ev.seed)]
    if methods:
        frames += [
            model_readings(inputs.models[r.role.name][0], name, probes, methods)
            for name, r in RUNS.items()
            if not r.randomised
        ]
    return with_cue_measures(pd.concat(frames, ignore_index=True))


def _trained_readings(measured: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """The trained runs' readings of the compared ``methods``, in the listed method order."""
    trained = measured[~measured["run"].map(lambda r: RUNS[r].randomised) & measured["method"].isin(methods)]
    order = {m: i for i, m in enumerate(methods)}
    return trained.sort_values("method", key=lambda c: c.map(order), kind="stable")


def run_study(inputs: StudyInputs) -> StudyResult:
    cfg, ev = inputs.cfg, inputs.cfg.evaluation
    probes = probe_set(inputs)
    measured = readings(inputs, probes)
    scores = ranking_frame(measured)
    explained = [k for k in RANKINGS if (scores["ranking"] == k).any()]  # no randomised runs under "none"
    studies = {k: swap_summary(scores, k, ev.bootstrap_resamples, ev.confidence, ev.seed) for k in explained}
    if "randomised" in studies:  # re-initialised: the head, or it and the tuned blocks
        studies["randomised"]["scope"] = ev.swap_randomise
    readers = width_readers(inputs)
    behaviour = model_behaviour(inputs.records, readers)
    trained = _trained_readings(measured, ev.swap_methods)
    accuracy = {
        name: role_test_accuracy(cfg, inputs.prompts, inputs.models[name], role.cue)
        for name, role in ROLES.items()
    }
    ledger, faithful = study_faithfulness(
        FaithfulnessInputs(inputs.records, readers, behaviour, trained, dict(probes.cues), accuracy),
        ev.swap_clear_margin,
        ev.confidence,
        ev.swap_layer_ig_steps,
    )
    summary = {
        "studies": studies,
        "methods": descriptions(ledger, faithful, ev.confidence),
        "behaves_as_trained": behaves_as_trained(ledger),
        "clear_margin": ev.swap_clear_margin,
        "accuracy": accuracy,
        "faithfulness": faithful,
        "residuals": {name: residuals(f) for name, f in inputs.runs.items()},
        "probes": sorted(probes.ids),
    }
    return StudyResult(scores, behaviour, summary, headline(studies, inputs.runs), ledger)


def width_readers(inputs: StudyInputs) -> dict[str, WidthReader]:
    """Per role: records -> the label's width under the role's model (``behaviour.label_widths``)."""
    cfg, out = inputs.cfg, {}
    for role, (model, tokenizer) in inputs.models.items():
        out[role] = label_widths(model, tokenizer, cfg.data.max_tokens, cfg.train.eval_batch_size)
    return out


def model_behaviour(records: list[QuestionRecord], readers: dict[str, WidthReader]) -> pd.DataFrame:
    """Per (role, probe): the label's width under the text edits and the cue the model depends on."""
    frames = [
        cue_dependence(yardstick_widths(records, reader, "text_edits"), role)
        for role, reader in readers.items()
    ]
    return pd.concat(frames, ignore_index=True)


def residuals(frame: pd.DataFrame) -> dict[str, float | int]:
    return {
        "median": float(frame["residual"].median()),
        "max": float(frame["residual"].abs().max()),
        "grad_evals": int(frame["grad_evals"].sum()),
        "n": len(frame),
    }


def headline(studies: dict[str, dict[str, Any]], runs: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """``headline.json``: the trained ranking's study, the randomised accuracy (None without randomised
    runs), the trained runs' Eq. 9."""
    t, r = studies["trained"], studies.get("randomised", {})
    trained = pd.concat([frame for n, frame in runs.items() if not RUNS[n].randomised])
    keys = ("swap_accuracy", "swap_ci_low", "swap_ci_high")
    return {
        **{k: t[k] for k in keys},
        "randomised_swap_accuracy": r.get("swap_accuracy"),
        **{k: t[k] for k in ("share_difference", "share_ci_low", "share_ci_high")},
        "R_median": float(trained["residual"].abs().median()),
        "R_max": float(trained["residual"].abs().max()),
    }


def role_test_accuracy(
    cfg: RootConfig, prompts: pd.DataFrame, loaded: Any, cue: int
) -> dict[str, float | int]:
    """The role's accuracy on the test records that are not probes, by which cue resolves them."""
    model, tokenizer = loaded
    rows = role_test_records(prompts, cue)
    masses = prompt_masses(
        model, rows, tokenizer.pad_token_id, cfg.train.eval_batch_size, cfg.train.feature_cache_dir
    )
    return role_accuracy(masses, rows, cue)
