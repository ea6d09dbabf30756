"""Task ``swap``: the two-cue swap control's measures -> ``<artifacts>/swap/``:

- ``study/per_question.parquet``: per (ranking, role, probe) whether the learned cue's best token outranks
  the other cue, the learned cue's and cue 1's share of the two cues' magnitude (``evaluation/swap.py``);
  rankings ``trained`` (the ``attribute`` stage's model A and ``attribute_swap``'s model B), ``randomised``
  (both heads re-initialised) and ``input_only`` (``nulls.input_only_scores`` against the same references);
- ``study/behaviour.parquet``: per (role, probe) the label's width on the probe and on its four text edits,
  each cue's behavioural effect, which cue the model depends on and by what margin
  (``evaluation/swap_behaviour.py``);
- ``study/methods.parquet``: per (method, role, probe) each compared method's reading of the two cues,
  scored against the behaviour and against the training rule (``swap_methods.py``, ``swap_agreement.py``);
- ``study/summary.json``: each ranking's study, each method's comparison, how often each model behaves as
  trained, each role's accuracy by which cue resolves the question, and the runs' completeness residuals;
- ``headline.json``: swap_accuracy, swap_ci_low, swap_ci_high, randomised_swap_accuracy, share_difference,
  share_ci_low, share_ci_high, R_median and R_max (Eq. 9, over both trained models' rows);
- ``methods.json`` (a DVC metric): per method the training-rule swap accuracy and the behavioural agreement
  (on the clear probes too), each with its Wilson lower bound, and per model the share of probes where it
  behaves as trained.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.attribution.model import chosen_device, model_device
from xurs_pipeline.config import RootConfig, train_run_hash
from xurs_pipeline.contracts import artifact, swap_classifier_dir
from xurs_pipeline.data.dataset import data_config_hash, load_records
from xurs_pipeline.evaluation.artifacts import read_attributions, read_prompts
from xurs_pipeline.evaluation.swap import SWAP_RUNS, passes, score_frame, skipped_reason, swap_summary
from xurs_pipeline.evaluation.swap_agreement import comparison, scored
from xurs_pipeline.evaluation.swap_behaviour import behaves_as_trained, cue_dependence, edit_widths
from xurs_pipeline.evaluation.swap_methods import RUN_METHODS
from xurs_pipeline.evaluation.swap_probes import ProbeSet, label_widths, method_readings
from xurs_pipeline.evaluation.swap_study import (
    input_only_magnitudes,
    prepared_references,
    role_accuracy,
    role_test_records,
)
from xurs_pipeline.evaluation.verdicts import json_safe
from xurs_pipeline.io import ArtifactError, Provenance, write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.tasks.runner import log
from xurs_pipeline.train.predict import classifier_outputs

RANKINGS = ("trained", "randomised", "input_only")
ROLE_CUE = {"A": 1, "B": 2}


def run(cfg: RootConfig) -> dict[str, Any] | None:
    study = artifact("swap_study").at(cfg.paths)
    reason = skipped_reason(cfg.data.source)
    if reason is not None:
        write_json({"skipped": reason}, study / "summary.json")
        write_json({}, artifact("swap_methods").at(cfg.paths))
        log.info("swap: skipped (%s)", reason)
        return {}
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    runs = _attributions(cfg)
    probes = _probes(runs)
    models = _models(cfg)
    embedding = _shared_embedding(models)
    references = prepared_references(prompts, probes, cfg.attribution, models["A"][1].pad_token_id)
    input_only = input_only_magnitudes(prompts, references, embedding)
    scores = score_frame(_ranking_frame(runs, input_only, probes), _cues(prompts))
    studies = _studies(scores, cfg)
    behaviour = _behaviour(cfg, models, probes)
    methods = _method_scores(cfg, models, prompts, runs, references, input_only, behaviour)
    summary = {
        "studies": studies,
        "methods": comparison(methods, cfg.evaluation.confidence),
        "behaves_as_trained": behaves_as_trained(behaviour),
        "clear_margin": cfg.evaluation.swap_clear_margin,
        "accuracy": {
            role: role_test_accuracy(cfg, prompts, models[role], cue) for role, cue in ROLE_CUE.items()
        },
        "residuals": {name: _residuals(f) for name, f in runs.items()},
        "probes": probes,
    }
    _write(cfg, scores, behaviour, methods, summary)
    return _headline(studies, pd.concat([runs["A"], runs["B"]]))


def _attributions(cfg: RootConfig) -> dict[str, pd.DataFrame]:
    """Model A's rows (the attribute stage) and the swap runs' (attribute_swap), by run name."""
    out = artifact("swap_attributions").at(cfg.paths)
    return {
        name: read_attributions(artifact("attributions").at(cfg.paths).parent if name == "A" else out / name)
        for name in SWAP_RUNS
    }


def _probes(runs: dict[str, pd.DataFrame]) -> list[str]:
    """The probes model A's run explains; every other run must explain the same ones."""
    probes = sorted(set(runs["A"]["record_id"]))
    for name, frame in runs.items():
        if sorted(set(frame["record_id"])) != probes:
            raise ArtifactError(f"swap run {name} explains other questions than model A's attribute run")
    return probes


def _models(cfg: RootConfig) -> dict[str, Any]:
    """Models A and B (classifier, tokenizer) on ``evaluation.device`` (the edits' and methods' passes)."""
    device = chosen_device(cfg.evaluation.device)
    models = {}
    for role in ROLE_CUE:
        classifier, tokenizer = load_classifier(
            swap_classifier_dir(cfg.paths, role), config_hash=train_run_hash(cfg)
        )
        models[role] = (classifier.to(device).eval(), tokenizer)
    return models


def _shared_embedding(models: dict[str, Any]) -> np.ndarray:
    """The one input embedding (vocab, hidden) both models share (float64)."""
    a, b = (
        models[r][0].backbone.get_input_embeddings().weight.detach().double().cpu().numpy() for r in ROLE_CUE
    )
    if not np.array_equal(a, b):
        raise ArtifactError("models A and B embed tokens differently: the swap study needs one backbone")
    return a


def _cues(prompts: pd.DataFrame) -> dict[str, list[list[int]]]:
    return {rid: [list(map(int, c)) for c in cues] for rid, cues in zip(prompts["record_id"],
            prompts["cue_positions"], strict=True)}  # fmt: skip


def _ranking_frame(
    runs: dict[str, pd.DataFrame], input_only: dict[str, np.ndarray], probes: list[str]
) -> pd.DataFrame:
    """ranking, role, record_id, token_magnitude of every run and of the input-only ranking (both roles)."""
    rows = [
        {"ranking": "randomised" if SWAP_RUNS[name][1] else "trained", "role": name[0],
         "record_id": r.record_id, "token_magnitude": np.asarray(r.token_magnitude)}
        for name, frame in runs.items()
        for r in frame.itertuples()
    ]  # fmt: skip
    rows += [{"ranking": "input_only", "role": role, "record_id": rid, "token_magnitude": input_only[rid]}
             for role in ROLE_CUE for rid in probes]  # fmt: skip
    return pd.DataFrame(rows)


def _studies(scores: pd.DataFrame, cfg: RootConfig) -> dict[str, dict[str, Any]]:
    """Each ranking's swap study (``swap_summary``) with its verdict."""
    ev = cfg.evaluation
    studies: dict[str, dict[str, Any]] = {
        k: swap_summary(scores, k, ev.bootstrap_resamples, ev.confidence, ev.seed) for k in RANKINGS
    }
    for result in studies.values():
        result["passes"] = passes(result)
    studies["randomised"]["scope"] = ev.swap_randomise  # re-initialised: the head, or it and the tuned blocks
    log.info("swap: %s", {k: v["swap_accuracy"] for k, v in studies.items()})
    return studies


def _behaviour(cfg: RootConfig, models: dict[str, Any], probes: list[str]) -> pd.DataFrame:
    """Per (role, probe): the label's width under the text edits and the cue the model depends on."""
    wanted = set(probes)
    records = [r for r in load_records(cfg.data) if r.record_id in wanted]
    frames = []
    for role, (model, tokenizer) in models.items():
        reader = label_widths(
            model, tokenizer, cfg.data.max_tokens, cfg.train.eval_batch_size, model_device(model)
        )
        frames.append(cue_dependence(edit_widths(records, reader), role))
    return pd.concat(frames, ignore_index=True)


def _method_scores(
    cfg: RootConfig,
    models: dict[str, Any],
    prompts: pd.DataFrame,
    runs: dict[str, pd.DataFrame],
    references: dict[str, np.ndarray],
    input_only: dict[str, np.ndarray],
    behaviour: pd.DataFrame,
) -> pd.DataFrame:
    """Every ``evaluation.swap_methods`` method's reading of every probe under both models, scored."""
    ev = cfg.evaluation
    by_id = prompts.set_index("record_id")
    cues = _cues(prompts)
    frames = []
    for role, (model, _) in models.items():
        run = runs[role].set_index("record_id")
        probes = ProbeSet(
            ids={rid: list(map(int, by_id.loc[rid, "input_ids"])) for rid in references},
            cues={rid: (cues[rid][0], cues[rid][1]) for rid in references},
            labels={rid: int(by_id.loc[rid, "answer_idx"]) for rid in references},
            references=references,
            magnitudes={"input_only": input_only,
                        **{m: {rid: np.asarray(run.loc[rid, "token_magnitude"]) for rid in references}
                           for m in RUN_METHODS}},
            evals={"input_only": dict.fromkeys(references, 0),
                   **{m: {rid: int(run.loc[rid, "grad_evals"]) for rid in references} for m in RUN_METHODS}},
        )  # fmt: skip
        frames.append(method_readings(model, role, probes, ev.swap_methods, ev.swap_layer_ig_steps, ev.seed))
    return scored(pd.concat(frames, ignore_index=True), behaviour, ev.swap_clear_margin)


def _residuals(frame: pd.DataFrame) -> dict[str, float | int]:
    return {"median": float(frame["residual"].median()), "max": float(frame["residual"].abs().max()),
            "grad_evals": int(frame["grad_evals"].sum()), "n": len(frame)}  # fmt: skip


def _write(
    cfg: RootConfig, scores: pd.DataFrame, behaviour: pd.DataFrame, methods: pd.DataFrame, summary: dict
) -> None:
    study, run_hash = artifact("swap_study").at(cfg.paths), train_run_hash(cfg)
    write_parquet(scores, study / "per_question.parquet", Provenance("swap_scores", 1, run_hash))
    write_parquet(behaviour, study / "behaviour.parquet", Provenance("swap_behaviour", 1, run_hash))
    write_parquet(methods, study / "methods.parquet", Provenance("swap_methods", 1, run_hash))
    write_json(json_safe(summary), study / "summary.json")
    write_json(json_safe(method_metrics(summary)), artifact("swap_methods").at(cfg.paths))


def method_metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """``methods.json``: per method the swap accuracy and agreement with Wilson lower bounds; per model the
    share of probes where it behaves as trained."""
    keys = ("swap", "swap_low", "agreement", "agreement_low", "agreement_clear", "agreement_clear_low")
    out: dict[str, Any] = {
        f"as_trained_{role}": v["share"] for role, v in summary["behaves_as_trained"].items()
    }
    out.update({m: {k: v[k] for k in keys} for m, v in summary["methods"].items()})
    return out


def _headline(studies: dict[str, dict[str, Any]], trained: pd.DataFrame) -> dict[str, Any]:
    t, r = studies["trained"], studies["randomised"]
    return {
        "swap_accuracy": t["swap_accuracy"],
        "swap_ci_low": t["swap_ci_low"],
        "swap_ci_high": t["swap_ci_high"],
        "randomised_swap_accuracy": r["swap_accuracy"],
        "share_difference": t["share_difference"],
        "share_ci_low": t["share_ci_low"],
        "share_ci_high": t["share_ci_high"],
        "R_median": float(trained["residual"].abs().median()),
        "R_max": float(trained["residual"].abs().max()),
    }


def role_test_accuracy(
    cfg: RootConfig, prompts: pd.DataFrame, loaded: Any, cue: int
) -> dict[str, float | int]:
    """The role's accuracy on the test records that are not probes, by which cue resolves them."""
    model, tokenizer = loaded
    rows = role_test_records(prompts, cue)
    head_only = model.meta["adaptation"] == "head_only"
    out = classifier_outputs(
        model,
        [list(map(int, x)) for x in rows["input_ids"]],
        tokenizer.pad_token_id,
        cfg.train.eval_batch_size,
        feature_cache_dir=cfg.train.feature_cache_dir if head_only else None,
        device=model_device(model),
    )
    return role_accuracy(out.masses, rows, cue)
