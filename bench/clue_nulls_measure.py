"""The clue study's localisation beside its nulls, question by question (what ``checks`` computes for the
clue card, with partial results usable at any time).

In a project where ``train`` has run for a clue experiment (``xurs params experiment=
controlled_direct_kronrod_sequence && dvc repro train``): for each of the first N questions the attribution
would explain, the trained model's attribution (the attribute stage's estimator, references and explained
option), the same with the classifier's head re-initialised (``evaluation.randomisation.reinitialise``,
seed ``evaluation.seed``, as the checks stage's first randomisation step) and the input-only ranking;
App. C localisation over the live positions of each; one JSON line per question to ``--out`` and the
running summary (rank-1 shares, clue shares, base rate) after each question.

    python bench/clue_nulls_measure.py [--project DIR] [--questions N] [--out FILE]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time
from pathlib import Path

import pandas as pd

from xurs_pipeline.attribution.endpoints import natural_widths
from xurs_pipeline.attribution.inputs import reference_pool, select_questions
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.model import model_device
from xurs_pipeline.attribution.question import ReferencePool
from xurs_pipeline.config import load_params, train_run_hash
from xurs_pipeline.contracts import artifact
from xurs_pipeline.evaluation.artifacts import read_prompts
from xurs_pipeline.evaluation.clue_nulls import (
    clue_nulls,
    input_only_frame,
    live_by_question,
    prepared_references,
)
from xurs_pipeline.evaluation.randomisation import reinitialise
from xurs_pipeline.models.checkpoint import load_classifier


def _pool(model, ids, records, at):  # type: ignore[no-untyped-def]
    pool = ReferencePool(records, ids)
    device = model_device(model)
    pool.natural = [natural_widths(model, c, at.eval_batch_size, device, at.target_fn) for c in ids]
    return pool


def _rows(result, ranking: str) -> list[dict]:  # type: ignore[no-untyped-def]
    if result.failure is not None:
        raise FloatingPointError(result.failure.message())
    return [{**r.to_row(), "ranking": ranking} for r in result.rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default=".")
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--out", default="clue_nulls.jsonl")
    args = parser.parse_args()
    root = Path(args.project)
    cfg = load_params(root / "params.yaml")
    paths = dataclasses.replace(cfg.paths, artifacts=str(root / cfg.paths.artifacts))
    at = dataclasses.replace(cfg.attribution, max_questions=args.questions, progress=False)
    ev = cfg.evaluation
    prompts = read_prompts(artifact("prompts").at(paths))
    trained, tokenizer = load_classifier(artifact("classifier").at(paths), config_hash=train_run_hash(cfg))
    randomised = copy.deepcopy(trained)
    reinitialise(randomised, "head", ev.seed)
    pad = tokenizer.pad_token_id
    questions = select_questions(prompts, at, None)
    records, ids = reference_pool(prompts, at, None)
    pools = {
        "trained": _pool(trained, ids, records, at),
        "randomised_head": _pool(randomised, ids, records, at),
    }
    embedding = trained.backbone.get_input_embeddings().weight.detach().double().numpy()
    rows: list[dict] = []
    boot = (ev.bootstrap_resamples, ev.confidence, ev.bootstrap_method, ev.seed)
    out = open(args.out, "a")  # noqa: SIM115
    print(f"{cfg.experiment_name}: {len(questions)} questions, kronrod tolerance {at.kronrod_tolerance}")
    for q in questions:
        start = time.perf_counter()
        first = _rows(attribute_question(trained, q, pools["trained"], at, pad), "trained")
        targets = tuple(int(r["target"]) for r in first)
        mid = time.perf_counter()
        second = _rows(
            attribute_question(randomised, q, pools["randomised_head"], at, pad, targets=targets),
            "randomised_head",
        )
        end = time.perf_counter()
        rows += first + second
        frame = pd.DataFrame(rows)
        main_rows = frame[frame["ranking"] == "trained"]
        refs = prepared_references(main_rows, prompts, at.reference_alignment, pad)
        live = live_by_question(prompts, refs, embedding)
        rankings = {name: frame[frame["ranking"] == name] for name in ("trained", "randomised_head")}
        rankings["input_only"] = input_only_frame(main_rows, prompts, refs, embedding)
        table, summary = clue_nulls(rankings, prompts, live, *boot)
        mine = table[(table["record_id"] == q.record_id) & (table["region"] == "case_text")]
        line = {
            "record_id": q.record_id, "target": list(targets),
            "seconds": {"trained": round(mid - start, 1), "randomised_head": round(end - mid, 1)},
            "grad_evals": {r["ranking"]: int(r["grad_evals"]) for r in first + second},
            "residual": {r["ranking"]: float(r["residual"]) for r in first + second},
            "width": {r["ranking"]: float(r["width_input"]) for r in first + second},
            "case_text": {str(r.ranking): {"best_rank": int(r.best_rank), "clue_share": float(r.clue_share),
                                           "n_live": int(r.n_live), "n_clue_live": int(r.n_clue_live)}
                          for r in mine.itertuples()},
        }  # fmt: skip
        out.write(json.dumps(line) + "\n")
        out.flush()
        print(json.dumps(line))
        for region in ("case_text", "all_text"):
            parts = [
                f"{name} first {100 * m[region]['best_rank_1_share']:.0f}% "
                f"share {m[region]['mean_clue_share_pct']:.1f}%"
                for name, m in summary.items()
            ]
            base = summary["trained"][region]["base_rate_rank_1"]
            n = summary["trained"][region]["questions"]
            print(
                f"  {region} ({n} q): " + "; ".join(parts) + f"; random scores {100 * base:.1f}%", flush=True
            )
    out.close()


if __name__ == "__main__":
    main()
