"""Task ``swap``: the two-cue swap control's measures (``evaluation/swap.py``) -> ``<artifacts>/swap/``:

- ``per_question.parquet``: per (ranking, role, probe) whether the learned cue's best token outranks the
  other cue, the learned cue's and cue 1's share of the two cues' magnitude; rankings ``trained`` (the
  ``attribute`` stage's model A and ``attribute_swap``'s model B), ``randomised`` (both heads
  re-initialised) and ``input_only`` (``nulls.input_only_scores`` against the same references);
- ``summary.json``: each ranking's study (swap accuracy with Wilson intervals, overall and per model; share
  difference with its question-level bootstrap interval; verdict), each role's accuracy by which cue
  resolves the question, and the completeness residuals of every run;
- ``headline.json``: swap_accuracy, swap_ci_low, swap_ci_high, randomised_swap_accuracy, share_difference,
  share_ci_low, share_ci_high, R_median and R_max (Eq. 9, over both trained models' rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from xurs_pipeline.config import RootConfig, train_run_hash
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash
from xurs_pipeline.evaluation.artifacts import read_attributions, read_prompts
from xurs_pipeline.evaluation.swap import SWAP_RUNS, passes, score_frame, skipped_reason, swap_summary
from xurs_pipeline.evaluation.swap_study import input_only_magnitudes, role_accuracy, role_test_records
from xurs_pipeline.evaluation.verdicts import json_safe
from xurs_pipeline.io import ArtifactError, Provenance, write_json, write_parquet
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.tasks.attribute_swap import swap_classifier_dir
from xurs_pipeline.tasks.runner import log
from xurs_pipeline.train.predict import classifier_outputs

RANKINGS = ("trained", "randomised", "input_only")


def run(cfg: RootConfig) -> dict[str, Any]:
    study = artifact("swap_study").at(cfg.paths)
    reason = skipped_reason(cfg.data.source)
    if reason is not None:
        write_json({"skipped": reason}, study / "summary.json")
        log.info("swap: skipped (%s)", reason)
        return {}
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    runs = _attributions(cfg)
    probes = sorted(set(runs["A"]["record_id"]))
    for name, frame in runs.items():
        if sorted(set(frame["record_id"])) != probes:
            raise ArtifactError(f"swap run {name} explains other questions than model A's attribute run")
    models = {
        role: load_classifier(swap_classifier_dir(cfg.paths, role), config_hash=train_run_hash(cfg))
        for role in ("A", "B")
    }
    tokenizer = models["A"][1]
    embedding = models["A"][0].backbone.get_input_embeddings().weight.detach().double().numpy()
    other = models["B"][0].backbone.get_input_embeddings().weight.detach().double().numpy()
    if not np.array_equal(embedding, other):
        raise ArtifactError("models A and B embed tokens differently: the swap study needs one backbone")
    input_only = input_only_magnitudes(prompts, probes, cfg.attribution, tokenizer.pad_token_id, embedding)
    rows = []
    for name, frame in runs.items():
        role, randomised = name[0], SWAP_RUNS[name][1]
        rows += [
            {
                "ranking": "randomised" if randomised else "trained",
                "role": role,
                "record_id": r.record_id,
                "token_magnitude": np.asarray(r.token_magnitude),
            }
            for r in frame.itertuples()
        ]
    rows += [
        {"ranking": "input_only", "role": role, "record_id": rid, "token_magnitude": input_only[rid]}
        for role in ("A", "B")
        for rid in probes
    ]
    cues = dict(
        zip(
            prompts["record_id"],
            ([list(map(int, c)) for c in p] for p in prompts["cue_positions"]),
            strict=True,
        )
    )
    scores = score_frame(pd.DataFrame(rows), cues)
    ev = cfg.evaluation
    studies = {k: swap_summary(scores, k, ev.bootstrap_resamples, ev.confidence, ev.seed) for k in RANKINGS}
    for result in studies.values():
        result["passes"] = passes(result)
    studies["randomised"]["scope"] = ev.swap_randomise  # re-initialised: the head, or it and the tuned blocks
    trained = pd.concat([runs["A"], runs["B"]])
    summary = {
        "studies": studies,
        "accuracy": {
            "A": role_test_accuracy(cfg, prompts, models["A"], 1),
            "B": role_test_accuracy(cfg, prompts, models["B"], 2),
        },
        "residuals": {
            name: {
                "median": float(f["residual"].median()),
                "max": float(f["residual"].abs().max()),
                "grad_evals": int(f["grad_evals"].sum()),
                "n": len(f),
            }
            for name, f in runs.items()
        },
        "probes": probes,
    }
    log.info(
        "swap: %s",
        {k: {m: v[m] for m in ("swap_accuracy", "share_difference") if m in v} for k, v in studies.items()},
    )
    write_parquet(scores, study / "per_question.parquet", Provenance("swap_scores", 1, train_run_hash(cfg)))
    write_json(json_safe(summary), study / "summary.json")
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


def _attributions(cfg: RootConfig) -> dict[str, pd.DataFrame]:
    """Model A's rows (the attribute stage) and the swap runs' (attribute_swap), by run name."""
    out = artifact("swap_attributions").at(cfg.paths)
    return {
        name: read_attributions(artifact("attributions").at(cfg.paths).parent if name == "A" else out / name)
        for name in SWAP_RUNS
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
    )
    return role_accuracy(out.masses, rows, cue)
